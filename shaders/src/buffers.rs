//! Buffer helpers: storage buffers from bytes or floats, zeroed scratch, small uniforms.

use crate::error::GpuError;
use crate::gpu::Gpu;
use wgpu::util::DeviceExt;

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// Little-endian bytes of floats.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes of words.
pub fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Gpu {
    fn fits(&self, label: &str, bytes: u64) -> Result<(), GpuError> {
        let l = self.limits();
        let max = l.max_buffer_size.min(l.max_storage_buffer_binding_size);
        if bytes > max {
            return Err(GpuError::Shape(format!(
                "buffer {label} of {bytes} bytes exceeds the device's limit of {max}"
            )));
        }
        Ok(())
    }

    /// A storage buffer holding `bytes` (padded with zeros to a multiple of 4).
    pub fn storage(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer, GpuError> {
        let padded = bytes.len().div_ceil(4).max(1) * 4;
        self.fits(label, padded as u64)?;
        self.count_allocation(padded as u64);
        let buffer = if padded == bytes.len() {
            self.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage: STORAGE,
                })
        } else {
            let mut v = bytes.to_vec();
            v.resize(padded, 0);
            self.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: &v,
                    usage: STORAGE,
                })
        };
        Ok(buffer)
    }

    /// A storage buffer of `len` zeroed 32-bit words.
    pub fn zeroed(&self, label: &str, len: usize) -> Result<wgpu::Buffer, GpuError> {
        let size = (len.max(1) * 4) as u64;
        self.fits(label, size)?;
        self.count_allocation(size);
        Ok(self.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: STORAGE,
            mapped_at_creation: false,
        }))
    }

    /// A uniform buffer of words (padded to 16 bytes), writable with `write_buffer`.
    pub fn uniform(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let mut v = words.to_vec();
        v.resize(words.len().div_ceil(4).max(1) * 4, 0);
        self.count_allocation(v.len() as u64 * 4);
        self.device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &u32_bytes(&v),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// Queues a write of words into `buffer` at word `offset`; ordered before later submits.
    pub fn write_words(&self, buffer: &wgpu::Buffer, offset: usize, words: &[u32]) {
        self.queue()
            .write_buffer(buffer, (offset * 4) as u64, &u32_bytes(words));
    }

    /// Copies 32-bit words between storage buffers in one submission: each `(from,
    /// from_at, to, to_at, len)` copies `len` words of `from` starting at word `from_at` to
    /// `to` at word `to_at`.
    pub fn copy_words(
        &self,
        copies: &[(&wgpu::Buffer, usize, &wgpu::Buffer, usize, usize)],
    ) -> Result<(), GpuError> {
        self.check()?;
        let mut encoder = self
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for &(from, from_at, to, to_at, len) in copies {
            if len > 0 {
                encoder.copy_buffer_to_buffer(
                    from,
                    (from_at * 4) as u64,
                    to,
                    (to_at * 4) as u64,
                    (len * 4) as u64,
                );
            }
        }
        self.queue().submit([encoder.finish()]);
        self.check()
    }
}
