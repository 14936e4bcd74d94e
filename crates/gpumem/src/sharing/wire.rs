//! A [`SharedBuffer`] over a Unix socket: the numbers as bytes, the chunks'
//! descriptors as `SCM_RIGHTS` ancillary data (the kernel installs a
//! descriptor of the same file in the receiver), all in one message.
//!
//! The message: `GPMS`, the format's version (u16, [`WIRE_VERSION`]), two
//! bytes kept zero, the payload's length (u32), then the device name
//! (u16 length + UTF-8), the buffer's length (u64), the chunk count (u32)
//! and per chunk its offset, size and used bytes (u64 each), all little
//! endian; one descriptor per chunk, in order.

use std::io::{IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};

use super::{SharedBuffer, SharedChunk};
use crate::error::{GpuMemError, Result};

/// The most chunks one descriptor carries: Linux passes at most 253
/// descriptors in one message (`SCM_MAX_FD`).
pub const MAX_SHARED_CHUNKS: usize = 253;

const MAGIC: &[u8; 4] = b"GPMS";
/// The version of the message's layout. A receiver refuses any other, so
/// two processes built from gpumem releases whose layouts differ fail with
/// a reason instead of reading offsets from the wrong bytes.
pub const WIRE_VERSION: u16 = 1;
/// Magic, version, two zero bytes and the payload's length.
const HEAD: usize = 12;
/// The longest payload a sender writes: the name's length and a name of
/// at most 64 KiB, the buffer's length, the chunk count and three numbers
/// per chunk. A longer claimed length is refused before anything is read
/// into memory for it.
const MAX_BODY: usize = 2 + u16::MAX as usize + 8 + 4 + 24 * MAX_SHARED_CHUNKS;

fn io(operation: &'static str) -> impl FnOnce(Errno) -> GpuMemError {
    move |e| GpuMemError::ShareIo {
        operation,
        errno: e.raw_os_error(),
    }
}

fn bad(reason: String) -> GpuMemError {
    GpuMemError::BadSharedBuffer { reason }
}

fn encode(shared: &SharedBuffer) -> Result<Vec<u8>> {
    let name = shared.device.as_bytes();
    let name_len =
        u16::try_from(name.len()).map_err(|_| bad("a device name over 64 KiB".into()))?;
    let mut body = Vec::with_capacity(14 + name.len() + 24 * shared.chunks.len());
    body.extend_from_slice(&name_len.to_le_bytes());
    body.extend_from_slice(name);
    body.extend_from_slice(&shared.len.to_le_bytes());
    body.extend_from_slice(&(shared.chunks.len() as u32).to_le_bytes());
    for c in &shared.chunks {
        for v in [c.offset, c.bytes, c.used] {
            body.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut msg = Vec::with_capacity(HEAD + body.len());
    msg.extend_from_slice(MAGIC);
    msg.extend_from_slice(&WIRE_VERSION.to_le_bytes());
    msg.extend_from_slice(&[0, 0]);
    msg.extend_from_slice(&(body.len() as u32).to_le_bytes());
    msg.extend_from_slice(&body);
    Ok(msg)
}

/// Send `shared` over `socket`, its descriptors as `SCM_RIGHTS`; `shared`
/// keeps its own (drop it once sent).
///
/// ```
/// # use gpumem::prelude::*;
/// use std::os::unix::net::UnixStream;
/// let device = Device::host().conf("share:posix_fd")?.ignore_env().build()?;
/// let stream = device.default_stream();
/// let buffer = stream.reserve_shareable(3 * MIB)?;
/// let (ours, theirs) = UnixStream::pair().expect("a socket pair");
/// gpumem::sharing::send_shared(&ours, &stream.export(&buffer)?)?;
/// // In the other process, on its end of the socket:
/// let shared = gpumem::sharing::receive_shared(&theirs)?;
/// assert_eq!((shared.len, shared.chunks.len()), (3 * MIB, 1));
/// # Ok::<(), GpuMemError>(())
/// ```
///
/// # Errors
/// [`GpuMemError::BadSharedBuffer`] with more than [`MAX_SHARED_CHUNKS`]
/// chunks; [`GpuMemError::ShareIo`] when the socket refuses.
pub fn send_shared(socket: &UnixStream, shared: &SharedBuffer) -> Result<()> {
    if shared.chunks.len() > MAX_SHARED_CHUNKS {
        return Err(bad(format!(
            "{} chunks, more than one message carries ({MAX_SHARED_CHUNKS})",
            shared.chunks.len()
        )));
    }
    let msg = encode(shared)?;
    let fds: Vec<BorrowedFd<'_>> = shared.chunks.iter().map(|c| c.fd.as_fd()).collect();
    let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_SHARED_CHUNKS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(bad("the descriptors do not fit one message".into()));
    }
    let sent = sendmsg(
        socket,
        &[IoSlice::new(&msg)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .map_err(io("sending a shared buffer"))?;
    // The descriptors went with the first byte; the rest is plain bytes.
    let mut rest = &msg[sent..];
    while !rest.is_empty() {
        let n = rustix::net::send(socket, rest, SendFlags::NOSIGNAL)
            .map_err(io("sending a shared buffer"))?;
        rest = &rest[n..];
    }
    Ok(())
}

/// Receive a [`SharedBuffer`] that [`send_shared`] sent on the other end of
/// `socket` (blocking until it arrives). Its example is [`send_shared`]'s.
///
/// # Errors
/// [`GpuMemError::ShareIo`] when the socket fails or closes first;
/// [`GpuMemError::BadSharedBuffer`] when the message is not one, or its
/// descriptors do not match its chunks (every descriptor that came is
/// closed).
pub fn receive_shared(socket: &UnixStream) -> Result<SharedBuffer> {
    let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_SHARED_CHUNKS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut first = vec![0u8; 64 * 1024];
    let got = recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut first)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(io("receiving a shared buffer"))?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(list) = m {
            fds.extend(list);
        }
    }
    if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        return Err(bad(
            "its descriptors were cut off (too many for one message)".into(),
        ));
    }
    if got.bytes == 0 {
        return Err(GpuMemError::ShareIo {
            operation: "receiving a shared buffer (the sender closed the socket)",
            errno: Errno::PIPE.raw_os_error(),
        });
    }
    let mut msg = first[..got.bytes].to_vec();
    while msg.len() < HEAD {
        read_more(socket, &mut msg, HEAD)?;
    }
    if &msg[..4] != MAGIC {
        return Err(bad("it does not start with a shared-buffer header".into()));
    }
    let version = u16::from_le_bytes([msg[4], msg[5]]);
    if version != WIRE_VERSION {
        return Err(bad(format!(
            "it is version {version} of the shared-buffer message and this gpumem reads \
             version {WIRE_VERSION}: build both processes with the same gpumem release"
        )));
    }
    let body = u32::from_le_bytes([msg[8], msg[9], msg[10], msg[11]]) as usize;
    if body > MAX_BODY {
        return Err(bad(format!(
            "it claims a {body}-byte payload, over the {MAX_BODY} bytes any sender writes"
        )));
    }
    while msg.len() < HEAD + body {
        read_more(socket, &mut msg, HEAD + body)?;
    }
    decode(&msg[HEAD..HEAD + body], fds)
}

fn read_more(socket: &UnixStream, msg: &mut Vec<u8>, want: usize) -> Result<()> {
    let at = msg.len();
    msg.resize(want, 0);
    let mut s = socket;
    s.read_exact(&mut msg[at..])
        .map_err(|e| GpuMemError::ShareIo {
            operation: "receiving the rest of a shared buffer",
            errno: e.raw_os_error().unwrap_or(Errno::IO.raw_os_error()),
        })
}

/// Read fields off the front of a payload.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(bad("the message ends early".into()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
}

fn decode(body: &[u8], fds: Vec<OwnedFd>) -> Result<SharedBuffer> {
    let mut f = Fields(body);
    let name_len = u16::from_le_bytes(f.take(2)?.try_into().unwrap_or_default()) as usize;
    let device = String::from_utf8(f.take(name_len)?.to_vec())
        .map_err(|_| bad("the device name is not UTF-8".into()))?;
    let len = f.u64()?;
    let n = u32::from_le_bytes(f.take(4)?.try_into().unwrap_or_default()) as usize;
    if n != fds.len() {
        return Err(bad(format!(
            "{n} chunks came with {} descriptors",
            fds.len()
        )));
    }
    let mut chunks = Vec::with_capacity(n);
    for fd in fds {
        let (offset, bytes, used) = (f.u64()?, f.u64()?, f.u64()?);
        chunks.push(SharedChunk {
            fd,
            offset,
            bytes,
            used,
        });
    }
    Ok(SharedBuffer {
        device,
        len,
        chunks,
    })
}
