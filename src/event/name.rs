//! Event names.
