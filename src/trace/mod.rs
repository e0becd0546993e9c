//! The trace file format (stub).
