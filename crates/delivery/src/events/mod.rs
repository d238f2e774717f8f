//! Event streams (docs/api.md "Listen for events"): one [`Hub`] per server reads the
//! events table when woken and fans each event out to the open streams of
//! its recipients; each `GET /v1/events` stream ([`stream`]) replays what
//! it missed from the table, then takes the hub's live events.
//!
//! The table is the truth. The hub only makes live delivery cheap (one read
//! per wakeup for all streams instead of one per stream); a stream that
//! falls behind the hub goes back to the table, so nothing is missed and
//! nothing repeated, whatever the hub drops.

mod frame;
mod hub;
mod slots;
mod stream;

pub use frame::{sse_frame, sse_frame_with, write_event};
pub use hub::{Hub, HubOptions};
pub use slots::{StreamSlot, StreamSlots};
pub use stream::open_stream;
