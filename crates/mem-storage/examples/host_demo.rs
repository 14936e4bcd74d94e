//! Allocate pages on the host backend, write and read them back, print a report.
use mem_storage::units::format_bytes;
use mem_storage::{ComputeStorage, HostStorage, StorageError};

/// Runs the example; an error is printed with its message (`Display`),
/// not its `Debug` form, and the process exits with status 1.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), StorageError> {
    let mut storage = HostStorage::host();
    let mut pages = Vec::new();
    for (i, size) in [4096u64, 1 << 20, 8 << 20].into_iter().enumerate() {
        let page = storage.alloc(size)?;
        let pattern: Vec<u8> = (0..size).map(|b| (b as u8).wrapping_add(i as u8)).collect();
        storage.write(&page, &pattern)?;
        let mut back = vec![0u8; size as usize];
        storage.read(&page, &mut back)?;
        assert_eq!(back, pattern, "page {i} read back different bytes");
        pages.push(page);
    }
    println!(
        "pages: {}, bytes allocated: {}",
        pages.len(),
        format_bytes(storage.bytes_allocated())
    );
    for page in &pages {
        storage.dealloc(page.id)?;
    }
    println!(
        "after dealloc (queued): {}",
        format_bytes(storage.bytes_allocated())
    );
    storage.flush()?;
    println!("after flush: {}", format_bytes(storage.bytes_allocated()));
    Ok(())
}
