//! Lenient JSON building blocks shared by the version families. Each accepts every shape that
//! some slurmrestd version writes for the same field, so a family's structs stay small and a
//! surprise in one field (a `null`, a float, a string) never fails a whole response.

use crate::model::Text;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A number as Slurm writes it: a bare integer (v0.0.38), a float, `null`, a numeric string, or
/// the `{set, infinite, number}` struct of v0.0.39+.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Num {
    #[default]
    Unset,
    Infinite,
    Val(i64),
}

impl Num {
    pub fn get(self) -> Option<i64> {
        match self {
            Num::Val(v) => Some(v),
            _ => None,
        }
    }

    /// The value when it is set and greater than zero (Slurm writes 0 for "no time").
    pub fn pos(self) -> Option<i64> {
        self.get().filter(|v| *v > 0)
    }

    pub fn u32(self) -> u32 {
        self.get().unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32
    }

    pub fn u64(self) -> u64 {
        self.get().unwrap_or(0).max(0) as u64
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Num;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, null, or {set, infinite, number}")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
        Ok(Num::Val(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
        Ok(Num::Val(v.min(i64::MAX as u64) as i64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
        Ok(if v.is_finite() { Num::Val(v as i64) } else { Num::Infinite })
    }
    fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
        Ok(Num::Unset)
    }
    fn visit_str<E>(self, v: &str) -> Result<Num, E> {
        let v = v.trim();
        Ok(match v.parse::<i64>() {
            Ok(n) => Num::Val(n),
            Err(_) if v.eq_ignore_ascii_case("unlimited") || v.eq_ignore_ascii_case("infinite") => {
                Num::Infinite
            }
            Err(_) => Num::Unset,
        })
    }
    fn visit_none<E>(self) -> Result<Num, E> {
        Ok(Num::Unset)
    }
    fn visit_unit<E>(self) -> Result<Num, E> {
        Ok(Num::Unset)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Num, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Num::Unset)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Num, A::Error> {
        let (mut set, mut infinite, mut number) = (None, false, Num::Unset);
        while let Some(key) = map.next_key::<Text>()? {
            match key.as_str() {
                "set" => set = Some(map.next_value::<Option<bool>>()?.unwrap_or(false)),
                "infinite" => infinite = map.next_value::<Option<bool>>()?.unwrap_or(false),
                "number" => number = map.next_value::<Num>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if infinite {
            Num::Infinite
        } else if set == Some(false) {
            Num::Unset
        } else {
            number
        })
    }
}

/// A job's time limit: a [`Num`], except that `null` is unlimited. REST v0.0.38 writes
/// Slurm's INFINITE as `null` (seen live on 22.05: `TimeLimit=UNLIMITED` is
/// `"time_limit": null`); v0.0.40+ write `{"set": false, "infinite": true}`, never `null`.
/// Absent is unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limit(pub Num);

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<Num>::deserialize(d).map(|n| Limit(n.unwrap_or(Num::Infinite)))
    }
}

impl Limit {
    /// In seconds when limited, and whether it is unlimited: Slurm's INFINITE (written as
    /// such, or as 0xffffffff minutes) is unlimited; NO_VAL (0xfffffffe), 0 and unset are
    /// unknown.
    pub fn seconds(self) -> (Option<i64>, bool) {
        match self.0 {
            Num::Infinite => (None, true),
            Num::Val(0xffff_ffff) => (None, true),
            Num::Val(m) if m > 0 && m < 0xffff_fffe => (Some(m * 60), false),
            _ => (None, false),
        }
    }
}

/// A list of words written either as one string (`"idle"`, `"h100,nvlink"`) or as an array of
/// strings (`["IDLE","DRAIN"]`). Items are trimmed; empty items dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Words(pub Vec<Text>);

impl Words {
    pub fn upper(&self) -> Vec<Text> {
        self.0.iter().map(|w| w.to_ascii_uppercase()).collect()
    }

    /// [`Words::upper`] in place.
    pub fn into_upper(mut self) -> Vec<Text> {
        self.0.iter_mut().for_each(|w| w.make_ascii_uppercase());
        self.0
    }
}

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Words;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E>(self, v: &str) -> Result<Words, E> {
                Ok(Words(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Text::from).collect()))
            }
            fn visit_none<E>(self) -> Result<Words, E> {
                Ok(Words::default())
            }
            fn visit_unit<E>(self) -> Result<Words, E> {
                Ok(Words::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Words, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_i64<E>(self, v: i64) -> Result<Words, E> {
                Ok(Words(vec![v.to_string().into()]))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Words, E> {
                Ok(Words(vec![v.to_string().into()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Words, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<Option<Loose>>()? {
                    if let Some(Loose(Some(s))) = item
                        && !s.trim().is_empty()
                    {
                        out.push(Text::from(s.trim()));
                    }
                }
                Ok(Words(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Words, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Words::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// A string that tolerates other JSON types (numbers become their text; objects and arrays
/// become `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loose(pub Option<String>);

impl Loose {
    pub fn text(&self) -> Text {
        self.0.as_deref().map(Text::from).unwrap_or_default()
    }
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
    pub fn into_string(self) -> String {
        self.0.unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Loose, E> {
                Ok(Loose(Some(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_none<E>(self) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Loose, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A [`Loose`] read for its [`Loose::text`]: what serde gives as `Loose`, kept as [`Text`]
/// (`null` and `""` alike become empty), for fields that become `Text` anyway.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LooseText(pub Text);

impl<'de> Deserialize<'de> for LooseText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Loose::deserialize(d).map(|l| LooseText(l.text()))
    }
}

/// One entry of a response's `errors[]`. Its shape varies by version and endpoint
/// (`{error, errno}`, `{error, error_number, description, source}`, `{error, error_code}`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApiError {
    pub error: Loose,
    pub description: Loose,
    pub source: Loose,
    pub error_number: Num,
    pub errno: Num,
    pub error_code: Num,
}

impl ApiError {
    pub fn number(&self) -> Option<i64> {
        self.error_number.get().or(self.errno.get()).or(self.error_code.get())
    }

    /// `description: error (number)`, whichever parts are present.
    pub fn message(&self) -> String {
        let (e, d) = (self.error.as_str().trim(), self.description.as_str().trim());
        let mut s = match (d.is_empty(), e.is_empty()) {
            (false, false) if d != e => format!("{d}: {e}"),
            (false, _) => d.to_string(),
            (true, false) => e.to_string(),
            (true, true) => "unspecified error".to_string(),
        };
        if let Some(n) = self.number()
            && n != 0
        {
            s.push_str(&format!(" (error {n})"));
        }
        s
    }
}

/// The parts of every response envelope that gpuplane reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Envelope {
    pub errors: Vec<ApiError>,
    pub meta: Meta,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// v0.0.40+.
    pub slurm: MetaSlurm,
    /// v0.0.38 spells it with a capital S.
    #[serde(rename = "Slurm")]
    pub slurm_old: MetaSlurm,
}

impl Meta {
    pub fn release(&self) -> Option<&str> {
        [self.slurm.release.as_str(), self.slurm_old.release.as_str()].into_iter().find(|r| !r.is_empty())
    }
    pub fn cluster(&self) -> Option<&str> {
        Some(self.slurm.cluster.as_str()).filter(|c| !c.is_empty())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MetaSlurm {
    pub release: Loose,
    pub cluster: Loose,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        n: Num,
        #[serde(default)]
        w: Words,
    }

    fn n(json: &str) -> Num {
        serde_json::from_str::<T>(&format!("{{\"n\": {json}}}")).map(|t| t.n).unwrap_or(Num::Unset)
    }

    #[test]
    fn numbers_in_every_shape() {
        assert_eq!(n("42"), Num::Val(42));
        assert_eq!(n("-1"), Num::Val(-1));
        assert_eq!(n("4294901759"), Num::Val(4_294_901_759));
        assert_eq!(n("2.5"), Num::Val(2));
        assert_eq!(n("null"), Num::Unset);
        assert_eq!(n(r#"{"set": true, "infinite": false, "number": 7}"#), Num::Val(7));
        assert_eq!(n(r#"{"set": false, "infinite": false, "number": 0}"#), Num::Unset);
        assert_eq!(n(r#"{"set": false, "infinite": true, "number": 0}"#), Num::Infinite);
        assert_eq!(n(r#""UNLIMITED""#), Num::Infinite);
        assert_eq!(n(r#"[1]"#), Num::Unset);
    }

    #[test]
    fn words_from_strings_and_arrays() {
        let t: T = serde_json::from_str(r#"{"n": 0, "w": ["IDLE", "DRAIN"]}"#).unwrap();
        assert_eq!(t.w.0, ["IDLE", "DRAIN"]);
        let t: T = serde_json::from_str(r#"{"n": 0, "w": "train,infer"}"#).unwrap();
        assert_eq!(t.w.0, ["train", "infer"]);
        let t: T = serde_json::from_str(r#"{"n": 0, "w": null}"#).unwrap();
        assert!(t.w.0.is_empty());
    }

    #[test]
    fn error_messages_read_well() {
        let e: ApiError = serde_json::from_str(
            r#"{"description":"Failure to query nodes","error_number":1007,"error":"Protocol authentication error"}"#,
        )
        .unwrap();
        assert_eq!(e.message(), "Failure to query nodes: Protocol authentication error (error 1007)");
        let e: ApiError = serde_json::from_str(r#"{"error":"Invalid node name","errno":2017}"#).unwrap();
        assert_eq!(e.number(), Some(2017));
    }
}
