use super::Text;

/// Serialised as its label (`lustre`, `nvme`, `s3`), as the console shows it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub enum StorageKind {
    Lustre,
    Nfs,
    Weka,
    LocalNvme,
    ObjectStore,
    Volume,
}

impl StorageKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Lustre => "lustre",
            Self::Nfs => "nfs",
            Self::Weka => "weka",
            Self::LocalNvme => "nvme",
            Self::ObjectStore => "s3",
            Self::Volume => "pvc",
        }
    }
}

impl serde::Serialize for StorageKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// A filesystem or volume holding datasets, weights or checkpoints.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct Filesystem {
    pub name: Text,
    pub kind: StorageKind,
    pub mount: Text,
    /// What it holds: datasets, checkpoints, weights, scratch.
    pub purpose: Text,
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub read_bps: f64,
    pub write_bps: f64,
    /// Duration of the latest checkpoint write and restore seen on it.
    pub ckpt_write_s: Option<f32>,
    pub ckpt_restore_s: Option<f32>,
}

impl Filesystem {
    pub fn used_pct(&self) -> u8 {
        if self.capacity_bytes == 0 {
            return 0;
        }
        ((self.used_bytes as u128 * 100) / self.capacity_bytes as u128).min(100) as u8
    }
}
