//! [`KvFormat`]: the number format of the KV cache (f32 everywhere, f16 where the device
//! has `shader-f16`).

/// How the keys and values in a KV cache are stored. The kernels that write the cache
/// round to it and those that read it widen to f32, so everything else stays f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KvFormat {
    /// 4 bytes a value: what every adapter can do.
    #[default]
    F32,
    /// 2 bytes a value (IEEE half): half the cache's memory and read traffic, on devices
    /// with the `shader-f16` feature ([`crate::Gpu::has_f16`]).
    F16,
}

impl KvFormat {
    /// `f32` or `f16`, as the command line spells them.
    pub fn name(self) -> &'static str {
        match self {
            KvFormat::F32 => "f32",
            KvFormat::F16 => "f16",
        }
    }

    /// The format [`KvFormat::name`] spells `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        [KvFormat::F32, KvFormat::F16]
            .into_iter()
            .find(|k| k.name() == s)
    }

    /// Bytes of one cached value.
    pub fn bytes(self) -> usize {
        match self {
            KvFormat::F32 => 4,
            KvFormat::F16 => 2,
        }
    }

    /// 32-bit words of `values` cached values (rounded up).
    pub fn words(self, values: usize) -> usize {
        (values * self.bytes()).div_ceil(4)
    }

    /// WGSL that starts a kernel touching the cache: the `enable` directive f16 needs
    /// (directives must come before every declaration) and `kv_t`, the cache's element
    /// type.
    pub(crate) fn wgsl(self) -> &'static str {
        match self {
            KvFormat::F32 => "alias kv_t = f32;\n",
            KvFormat::F16 => "enable f16;\nalias kv_t = f16;\n",
        }
    }
}
