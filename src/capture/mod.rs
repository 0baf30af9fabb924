//! Live capture: drives `sys` for the commands that watch the kernel now
//! (`record`, later `top`, `trace`): opens one counter per event × CPU (×
//! thread), points every counter of a CPU at one ring, drains the rings on
//! poll wake-ups, and synthesizes from /proc what already ran before we
//! started. Records leave as raw kernel bytes to a `RecordSink`; nothing is
//! parsed here beyond the 8-byte header.
