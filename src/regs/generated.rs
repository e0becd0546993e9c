//! @generated stub
