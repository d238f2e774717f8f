//! Messages: append and get, order, visibility, paging, edits, reactions,
//! attachments and deletion.

mod changes;
mod reading;
