//! What session stores share: lease deadlines and the JSON columns of a state change.

pub mod columns;
pub mod lease;
