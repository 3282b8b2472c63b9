//! The guard pidfile's *record*: its format and file protocol, beside the abx-dl format ([`super::mtime`]): one JSON object per
//! file ([`entry`]: encode, decode, the rules of an entry), created so that exactly one creator
//! wins, read strictly and removed by content ([`file`](mod@file), through the one opener and the one
//! remove-by-content of [`super::retire`]). The single-instance operations over it — `check`,
//! `acquire`, `Guard` — are in [`crate::guard`], which also exports this format's public items. (Named `record`, not
//! `guard`, so that one name means one thing: `guard` is the operation, this is what it reads
//! and writes.)

pub(crate) mod entry;
pub(crate) mod file;
