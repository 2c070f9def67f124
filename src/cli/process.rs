//! What the command line sets up for its process before any thread starts: the allocator and
//! the signal handling.

/// glibc's allocator, tuned for this workload before any thread starts: blocks up to 256 MiB come
/// from the heap and freed memory is kept up to 1 GiB (the defaults map each large buffer fresh
/// and unmap it when freed, so every signature chunk and store read faulted its pages in again,
/// which is slow on virtual machines), and at most two arenas. The price: freed heap is kept
/// for reuse, so peak RSS at millions of documents is higher (docs/PERFORMANCE.md).
pub(super) fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// SIGINT and SIGTERM (Ctrl-C, a scheduler's time limit): blocked in every thread and taken by
/// one thread that says what happened and ends the process at once with 128 + the signal. That
/// is as safe as a crash, which every command survives: files are written under temporary names
/// and renamed, a task's marker comes last, locks die with the process, and the next run sweeps
/// temporary files and resumes. Must run before any other thread starts (they inherit the mask).
pub(super) fn handle_signals() {
    #[cfg(unix)]
    // SAFETY: the signal set is initialised by sigemptyset before use; pthread_sigmask and
    // sigwait only read it; _exit ends the process without running anything else.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        std::thread::spawn(move || {
            let mut sig: libc::c_int = 0;
            if libc::sigwait(&set, &mut sig) == 0 {
                let name = if sig == libc::SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                eprintln!("\ncorpus-dedup: interrupted ({name}); rerun the same command to resume");
                libc::_exit(128 + sig);
            }
        });
    }
}
