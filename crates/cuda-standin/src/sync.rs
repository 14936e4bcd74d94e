//! The leaf every module leans on: locking, and the record of contract
//! violations (printed, with the caller's backtrace under
//! `GPUMEM_STANDIN_BACKTRACE=1`, kept for the query, fatal under
//! `GPUMEM_STANDIN_ABORT=1`).

use std::sync::{Mutex, MutexGuard};

/// Every violation recorded, in order.
pub static VIOLATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Lock a mutex; a panic elsewhere (which aborts across the C boundary
/// anyway) leaves no half-updated table worth refusing.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Record a contract violation.
pub fn violation(message: String) {
    eprintln!("gpumem stand-in driver: CONTRACT VIOLATION: {message}");
    if std::env::var("GPUMEM_STANDIN_BACKTRACE").is_ok_and(|v| v == "1") {
        let thread = std::thread::current();
        let bt = std::backtrace::Backtrace::force_capture();
        eprintln!("on thread {:?}:\n{bt}", thread.name());
    }
    if std::env::var("GPUMEM_STANDIN_ABORT").is_ok_and(|v| v == "1") {
        eprintln!("gpumem stand-in driver: aborting (GPUMEM_STANDIN_ABORT=1)");
        std::process::abort();
    }
    lock(&VIOLATIONS).push(message);
}
