//! benchlab-controller
