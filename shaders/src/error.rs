//! Errors of the GPU layer: no adapter, a failed device request, a lost device, a shader
//! or validation error, a failed read-back, a mask that keeps nothing.

use std::fmt;

/// Why a GPU operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// No adapter was found (no WebGPU in the browser, no Vulkan driver natively).
    NoAdapter(String),
    /// The adapter refused to create a device with the limits asked for.
    RequestDevice(String),
    /// The device was lost (driver reset, tab backgrounded, `destroy`).
    DeviceLost(String),
    /// A shader failed to compile or a command failed validation.
    Validation(String),
    /// Mapping a buffer for read-back failed.
    Map(String),
    /// A request does not fit the device's limits or the kernel's shape rules.
    Shape(String),
    /// Masked sampling found no token the mask keeps: nothing can be drawn.
    AllMasked,
    /// The adapter lacks a feature the request needs (e.g. timestamp queries).
    Unsupported(String),
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoAdapter(m) => write!(
                f,
                "no GPU adapter: {m} (natively a Vulkan driver is needed, e.g. Mesa lavapipe; \
                 in the browser, WebGPU)"
            ),
            GpuError::RequestDevice(m) => write!(f, "the GPU refused to create a device: {m}"),
            GpuError::DeviceLost(m) => write!(f, "the GPU device was lost: {m}"),
            GpuError::Validation(m) => write!(f, "GPU validation error: {m}"),
            GpuError::Map(m) => write!(f, "reading a GPU buffer back failed: {m}"),
            GpuError::Shape(m) => write!(f, "GPU kernel shape error: {m}"),
            GpuError::Unsupported(m) => write!(f, "not supported by this GPU: {m}"),
            GpuError::AllMasked => write!(
                f,
                "the token mask keeps no token: there is nothing to sample (a dead end)"
            ),
        }
    }
}

impl std::error::Error for GpuError {}
