use super::Text;

/// Serialised as its label (`IB`, `RoCE`, `EFA`), as the console shows it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, borsh::BorshSerialize, borsh::BorshDeserialize,
)]
pub enum FabricKind {
    InfiniBand,
    RoCE,
    Efa,
}

impl FabricKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::InfiniBand => "IB",
            Self::RoCE => "RoCE",
            Self::Efa => "EFA",
        }
    }
}

impl serde::Serialize for FabricKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// Physical/logical port state as IB reports it (`ibstat`, node_exporter `infiniband_state`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub enum PortState {
    Active,
    Init,
    Armed,
    Down,
    Polling,
    Unknown,
}

impl PortState {
    pub fn label(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Init => "Init",
            Self::Armed => "Armed",
            Self::Down => "Down",
            Self::Polling => "Polling",
            Self::Unknown => "?",
        }
    }
}

/// One high-speed network port of a node.
#[derive(Debug, Clone, PartialEq, serde::Serialize, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct FabricPort {
    /// Device and port, e.g. `mlx5_0/1`.
    pub name: Text,
    pub kind: FabricKind,
    pub state: PortState,
    pub rate_gbps: u32,
    pub symbol_errors: u64,
    pub rcv_errors: u64,
    pub xmit_discards: u64,
    pub link_downed: u64,
    /// State changes seen in the recent window.
    pub flaps: u32,
    /// Since when it has been in `state`, as the source dates it (Prometheus, for a port not
    /// Active: the first step of the state's newest run, else the refresh that first saw it);
    /// `None` when the source does not say.
    #[serde(skip)]
    pub state_since: Option<super::Epoch>,
    /// Since when it has been flapping (`flaps` above 0 without a break), as the source dates
    /// it (Prometheus: the first step of that run, else the refresh that first saw it).
    #[serde(skip)]
    pub flaps_since: Option<super::Epoch>,
    pub rx_gbps: f32,
    pub tx_gbps: f32,
}

impl FabricPort {
    pub fn errors(&self) -> u64 {
        self.symbol_errors + self.rcv_errors + self.xmit_discards
    }
}
