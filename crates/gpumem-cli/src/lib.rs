//! gpumem-cli library parts.
