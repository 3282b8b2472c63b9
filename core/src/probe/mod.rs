//! The probe: "is this record in use?", answered without any side effect — the record's check
//! plus how many processes its recorded scope still holds. What each answer is, is the table's
//! ([`crate::ops`]); a probe never signals, removes or waits.

mod record;
mod records_in;
mod running;
mod view;

pub use record::{probe_pid_file, status_pid_file, Probe};
pub use records_in::{records_in_use, RecordNames, RecordsInUse};
pub use running::{processes_running, RunningProcess};
pub use view::ProbeView;
