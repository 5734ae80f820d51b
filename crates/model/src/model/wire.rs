//! The model's binary form for the flight recorder (borsh), where a field's type has none of
//! its own: a `&'static str` name (interned on reading, a bounded number of distinct names) and
//! the inline vectors of samples.

use borsh::io::{Error, ErrorKind, Read, Result, Write};
use borsh::{BorshDeserialize, BorshSerialize};
use std::collections::HashSet;
use std::sync::Mutex;

/// Distinct names a process interns from recordings at most: the names are a handful (store
/// operations, history metrics); a file that names more is refused, not leaked into memory.
pub const MAX_NAMES: usize = 4096;

static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// A `&'static str` as its text.
pub fn write_static<W: Write>(s: &&'static str, w: &mut W) -> Result<()> {
    s.serialize(w)
}

/// A `&'static str` read back: the same text, interned once per distinct name.
pub fn read_static<R: Read>(r: &mut R) -> Result<&'static str> {
    let s = String::deserialize_reader(r)?;
    if s.len() > 256 {
        return Err(Error::new(ErrorKind::InvalidData, format!("a name of {} bytes (at most 256)", s.len())));
    }
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(n) = names.get(s.as_str()) {
        return Ok(n);
    }
    if names.len() >= MAX_NAMES {
        return Err(Error::new(ErrorKind::InvalidData, format!("more than {MAX_NAMES} distinct names")));
    }
    let leaked: &'static str = Box::leak(s.into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}

/// An inline vector as a vector.
pub fn write_smallvec<A, W>(v: &smallvec::SmallVec<A>, w: &mut W) -> Result<()>
where
    A: smallvec::Array,
    A::Item: BorshSerialize,
    W: Write,
{
    v.as_slice().serialize(w)
}

pub fn read_smallvec<A, R>(r: &mut R) -> Result<smallvec::SmallVec<A>>
where
    A: smallvec::Array,
    A::Item: BorshDeserialize,
    R: Read,
{
    Ok(smallvec::SmallVec::from_vec(Vec::<A::Item>::deserialize_reader(r)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_interned_once() {
        let mut buf = Vec::new();
        write_static(&"util", &mut buf).unwrap();
        let a = read_static(&mut buf.as_slice()).unwrap();
        let b = read_static(&mut buf.as_slice()).unwrap();
        assert_eq!(a, "util");
        assert!(std::ptr::eq(a, b), "one copy per distinct name");
        let mut long = Vec::new();
        "x".repeat(300).serialize(&mut long).unwrap();
        assert!(read_static(&mut long.as_slice()).unwrap_err().to_string().contains("300 bytes"));
    }
}
