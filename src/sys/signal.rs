//! TODO(lead): being written.
