//! A table or object in document order, for what the user's order means
//! (a step's headers go out in the order written; a JSON-lines feeder's
//! columns are its first line's keys in order). Its own module, so the
//! flow model and the feeders both use it without importing each other.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// A TOML table or JSON object in document order.
#[derive(Debug, Clone, Default)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V2(std::marker::PhantomData))
    }
}
