//! Reads a struct from one JSON object, handing the JSON parser only the members the struct has
//! fields for: from the object's text ([`from_object`], for jobs the splitter hands on whole),
//! or from the members the splitter already found ([`from_members`]). A slurmrestd job record has some 130 members and gpuplane reads about 20; the
//! others (most of the ~5 KB, such as `job_resources`) are stepped over by the [`Lexer`],
//! which only tracks strings and nesting, instead of being parsed and discarded.
//!
//! The struct's `Deserialize` (derived, with the lenient types of `wire.rs`) is unchanged: the
//! field names come from serde (`deserialize_struct`), and each wanted value is parsed by
//! `serde_json` as before, so a surprise in one field still fails only that field's type.
//! Keys are compared as written: a key spelt with escapes (`"job\u005fid"`) is not recognised
//! (slurmrestd never writes one).

#[cfg(test)]
use super::scan::Member;
use super::split::{Lexer, bare_byte};
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// Deserializes `T` from the JSON object `obj` (see the module docs).
pub fn from_object<'de, T: de::Deserialize<'de>>(obj: &'de [u8]) -> serde_json::Result<T> {
    T::deserialize(Object { obj })
}

/// The field names `T` asks a deserializer for (`None` when it is no struct): the keys a
/// [`Wanted`](super::scan::Wanted) set is made of.
#[cfg(test)]
pub fn fields_of<T: de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut fields = None;
    let _ = T::deserialize(Probe(&mut fields));
    fields.filter(|f: &&[&str]| !f.is_empty())
}

#[cfg(test)]
struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

#[cfg(test)]
impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("fields noted"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Deserializes the struct `T` from members found by [`scan::walk`](super::scan::walk) with the
/// fields of [`fields_of::<T>`]: each member's value is the JSON text `buf[value]`.
#[cfg(test)]
pub fn from_members<'de, T: de::Deserialize<'de>>(
    buf: &'de [u8],
    members: &'de [Member],
) -> serde_json::Result<T> {
    T::deserialize(Found { buf, members })
}

#[cfg(test)]
struct Found<'de> {
    buf: &'de [u8],
    members: &'de [Member],
}

#[cfg(test)]
impl<'de> Deserializer<'de> for Found<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> serde_json::Result<V::Value> {
        Err(de::Error::custom("picked members read as something other than a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        visitor.visit_map(FoundMap { buf: self.buf, members: self.members.iter(), fields, value: &[] })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
struct FoundMap<'de> {
    buf: &'de [u8],
    members: std::slice::Iter<'de, Member>,
    fields: &'static [&'static str],
    value: &'de [u8],
}

#[cfg(test)]
impl<'de> MapAccess<'de> for FoundMap<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> serde_json::Result<Option<K::Value>> {
        let Some(m) = self.members.next() else { return Ok(None) };
        let name = self.fields.get(usize::from(m.field));
        let value = self.buf.get(m.value.clone());
        let (Some(name), Some(value)) = (name, value) else {
            return Err(de::Error::custom("a picked member out of range"));
        };
        self.value = value;
        seed.deserialize(BorrowedStrDeserializer::new(name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> serde_json::Result<V::Value> {
        whole(self.value, |de| seed.deserialize(de))
    }
}

/// One member's value, read as [`from_members`] reads it (serde_json over the whole of `buf`).
pub fn value<T: de::DeserializeOwned>(buf: &[u8]) -> serde_json::Result<T> {
    whole(buf, |de| T::deserialize(de))
}

/// Reads `buf` with serde_json's own parser, which must consume all of it.
fn whole<'de, T>(
    buf: &'de [u8],
    read: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::SliceRead<'de>>) -> serde_json::Result<T>,
) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(buf);
    let v = read(&mut de)?;
    de.end()?;
    Ok(v)
}

struct Object<'de> {
    obj: &'de [u8],
}

fn error(what: &str, at: usize) -> serde_json::Error {
    de::Error::custom(format!("{what} at byte {at} of the record"))
}

impl<'de> Deserializer<'de> for Object<'de> {
    type Error = serde_json::Error;

    /// Anything but a struct: the plain parser.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> serde_json::Result<V::Value> {
        whole(self.obj, |de| de.deserialize_any(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> serde_json::Result<V::Value> {
        let mut m = Members::new(self.obj, fields)?;
        let v = visitor.visit_map(&mut m)?;
        // Members after the last one serde asked for are still checked for shape.
        while m.next_member()?.is_some() {}
        Ok(v)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The members of one object, filtered to the wanted keys.
struct Members<'de> {
    obj: &'de [u8],
    /// Next byte to read.
    i: usize,
    /// Past the closing brace.
    done: bool,
    fields: &'static [&'static str],
    /// Per first byte of a key (mod 64), the key lengths (mod 64) some field has: most unwanted
    /// keys are turned away by one lookup.
    seen: [u64; 64],
    value: &'de [u8],
}

impl<'de> Members<'de> {
    fn new(obj: &'de [u8], fields: &'static [&'static str]) -> serde_json::Result<Self> {
        let mut seen = [0u64; 64];
        for f in fields {
            if let Some(b) = f.as_bytes().first() {
                seen[usize::from(b & 63)] |= 1 << (f.len() & 63);
            }
        }
        let mut m = Members { obj, i: 0, done: false, fields, seen, value: &[] };
        m.ws();
        if m.obj.get(m.i) != Some(&b'{') {
            return Err(error("expected an object", m.i));
        }
        m.i += 1;
        m.ws();
        if m.obj.get(m.i) == Some(&b'}') {
            m.close()?;
        }
        Ok(m)
    }

    fn ws(&mut self) {
        while matches!(self.obj.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// After the closing brace: only whitespace may follow.
    fn close(&mut self) -> serde_json::Result<()> {
        self.i += 1;
        self.done = true;
        self.ws();
        if self.i != self.obj.len() {
            return Err(error("trailing characters", self.i));
        }
        Ok(())
    }

    fn wanted(&self, key: &[u8]) -> Option<&'static str> {
        let first = *key.first()?;
        if self.seen[usize::from(first & 63)] & (1 << (key.len() & 63)) == 0 {
            return None;
        }
        self.fields.iter().copied().find(|f| f.as_bytes() == key)
    }

    /// The end of the value starting at `i`.
    fn value_end(&self, i: usize) -> serde_json::Result<usize> {
        let obj = self.obj;
        match obj.get(i) {
            Some(b'"') => {
                Lexer::in_string().value_end(obj, i + 1).ok_or_else(|| error("unterminated string", i))
            }
            Some(b'{' | b'[') => Lexer::default().value_end(obj, i).ok_or_else(|| error("unclosed value", i)),
            Some(b) if bare_byte(*b) => {
                let end = obj[i..].iter().position(|b| !bare_byte(*b)).map_or(obj.len(), |k| i + k);
                let word = &obj[i..end];
                let number = matches!(word[0], b'-' | b'0'..=b'9');
                if number || matches!(word, b"true" | b"false" | b"null") {
                    Ok(end)
                } else {
                    Err(error("expected a value", i))
                }
            }
            _ => Err(error("expected a value", i)),
        }
    }

    /// The next member's raw key and value text.
    fn next_member(&mut self) -> serde_json::Result<Option<(&'de [u8], &'de [u8])>> {
        if self.done {
            return Ok(None);
        }
        let obj = self.obj;
        if obj.get(self.i) != Some(&b'"') {
            return Err(error("expected a key", self.i));
        }
        let key_end =
            Lexer::in_string().value_end(obj, self.i + 1).ok_or_else(|| error("unterminated key", self.i))?;
        let key = &obj[self.i + 1..key_end - 1];
        self.i = key_end;
        self.ws();
        if obj.get(self.i) != Some(&b':') {
            return Err(error("expected ':'", self.i));
        }
        self.i += 1;
        self.ws();
        let start = self.i;
        self.i = self.value_end(start)?;
        let value = &obj[start..self.i];
        self.ws();
        match obj.get(self.i) {
            Some(b',') => {
                self.i += 1;
                self.ws();
            }
            Some(b'}') => self.close()?,
            _ => return Err(error("expected ',' or '}'", self.i)),
        }
        Ok(Some((key, value)))
    }
}

impl<'de> MapAccess<'de> for &mut Members<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> serde_json::Result<Option<K::Value>> {
        while let Some((key, value)) = self.next_member()? {
            if let Some(name) = self.wanted(key) {
                self.value = value;
                return seed.deserialize(BorrowedStrDeserializer::new(name)).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> serde_json::Result<V::Value> {
        whole(self.value, |de| seed.deserialize(de))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::slurm::wire::{Loose, Num, Words};
    use serde::Deserialize;

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Rec {
        job_id: Num,
        name: Loose,
        job_state: Words,
        inner: Inner,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        x: Num,
    }

    fn both(json: &str) -> (serde_json::Result<Rec>, serde_json::Result<Rec>) {
        (from_object(json.as_bytes()), serde_json::from_str(json))
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let json = r#" { "skip": {"a": [1, "}\"", {"b": null}]}, "job_id": {"set": true, "number": 7},
            "name": "a \"quoted\" \\ name", "s2": "x\\", "job_state": ["RUNNING", "COMPLETING"],
            "n": -1.5e3, "t": true, "inner": {"x": "12", "y": [ ]} } "#;
        let (picked, full) = both(json);
        assert_eq!(picked.unwrap(), full.unwrap());
        let (picked, full) = both("{}");
        assert_eq!(picked.unwrap(), full.unwrap());
    }

    #[test]
    fn a_surprise_in_a_wanted_field_is_that_fields_business() {
        let r: Rec = from_object(br#"{"job_id": null, "name": 42, "job_state": "PENDING"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.job_id, r.name.as_str(), r.job_state.0.len()), (Num::Unset, "42", 1));
        // A struct-typed field given a number fails as serde_json fails it.
        let (picked, full) = both(r#"{"inner": 5}"#);
        assert!(picked.is_err() && full.is_err());
    }

    #[test]
    fn malformed_records_are_errors() {
        for bad in [
            "",
            "null",
            "[1]",
            r#"{"a" 1}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 1 "b": 2}"#,
            r#"{"a": tru}"#,
            r#"{"a": }"#,
            r#"{"a": "x}"#,
            r#"{"a": {"b": 1}"#,
            r#"{"a": 1} x"#,
            r#"{"job_id": 1,"#,
            r#"{"name": "x"#,
            r#"{"job_id": 12x}"#,
            r#"{"job_id": 1, "job_id": 2}"#,
        ] {
            assert!(from_object::<Rec>(bad.as_bytes()).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn cut_records_never_panic() {
        let json = br#"{"skip":{"a":[1,"}\"",{"b":null}]},"job_id":7,"name":"n\\","inner":{"x":1}}"#;
        for cut in 0..json.len() {
            assert!(from_object::<Rec>(&json[..cut]).is_err(), "cut at {cut}");
        }
        assert!(from_object::<Rec>(json).is_ok());
    }
}
