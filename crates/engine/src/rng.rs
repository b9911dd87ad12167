//! The engine draws from benchlab's one generator, kept in `benchlab-rng`
//! so the file sets and the model need not depend on the engine for it.

pub use benchlab_rng::SplitMix64;
