//! Asynchronous read-back of storage buffers: copy to a mappable buffer, `map_async`, and
//! await the callback (natively after polling the device; on wasm32 the browser calls it).

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::oneshot;

impl Gpu {
    /// Reads `len` words from `buffer` starting at word `offset`.
    pub async fn read_words(
        &self,
        buffer: &wgpu::Buffer,
        offset: usize,
        len: usize,
    ) -> Result<Vec<u32>, GpuError> {
        self.check()?;
        let size = (len * 4) as u64;
        if (offset + len) as u64 * 4 > buffer.size() {
            return Err(GpuError::Shape(format!(
                "read of words {offset}..{} from a buffer of {} bytes",
                offset + len,
                buffer.size()
            )));
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let staging = self.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        encoder.copy_buffer_to_buffer(buffer, (offset * 4) as u64, &staging, 0, size);
        self.queue().submit([encoder.finish()]);
        let (tx, rx) = oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| tx.send(r));
        #[cfg(not(target_arch = "wasm32"))]
        self.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::DeviceLost(e.to_string()))?;
        match rx.await {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                self.check()?;
                return Err(GpuError::Map(e.to_string()));
            }
            None => {
                self.check()?;
                return Err(GpuError::Map("the map callback was dropped".into()));
            }
        }
        let words = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            let (chunks, _) = view.as_chunks::<4>();
            chunks.iter().map(|c| u32::from_le_bytes(*c)).collect()
        };
        staging.unmap();
        self.check()?;
        Ok(words)
    }

    /// Reads `len` floats from `buffer` starting at float `offset`.
    pub async fn read_f32(
        &self,
        buffer: &wgpu::Buffer,
        offset: usize,
        len: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let words = self.read_words(buffer, offset, len).await?;
        Ok(words.into_iter().map(f32::from_bits).collect())
    }
}
