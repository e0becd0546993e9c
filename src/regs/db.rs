//! Register database lookups (stub, filled by the generator work).
