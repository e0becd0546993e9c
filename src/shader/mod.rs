//! Shader containers (stub).
