//! The `audit` binary: parse, run, print, exit 0 (no violation found), 1 (violation found) or
//! 2 (error).

use std::io::Write;
use std::process::ExitCode;

use dp_audit::commands::{Cli, run};

/// The system allocator, with large blocks (the parsed releases, the text read, the training
/// rows' view: megabytes each at 10^6 releases per side; 4 to 32 MiB, see
/// [`ADVISED_MAX_BYTES`]) advised to the kernel as candidates for transparent huge pages. A
/// fresh process touches every page of them once; with 4 KiB pages that is one page fault each
/// (an `audit test` at 10^6 per side took 11 500 faults, 13 % of its time), with 2 MiB pages
/// one in 512. Only the advice is added: where the kernel does not honour it (huge pages off,
/// or none free) the pages are the usual ones. Hand-written: no well-kept crate adds this
/// advice to the system allocator alone (mimalloc's large-page option was measured at +24 MiB
/// peak memory).
struct LargeBlocksOnHugePages;

/// Blocks at least this large are advised.
const ADVISED_BYTES: usize = 4 << 20;

/// Blocks larger than this are not: on a machine busy with other work, a process whose
/// hundreds of megabytes (10^7 releases a side) were faulted 2 MiB at a time ran 5–23 % longer
/// than with the usual pages, for about the same CPU time (docs/benchmarks.md, "Ninth round"),
/// while at 10^6 a side the advised blocks stayed 5 % faster busy and 10 % idle.
const ADVISED_MAX_BYTES: usize = 32 << 20;

/// The huge page size on x86-64 and aarch64 with 4 KiB base pages.
const HUGE_PAGE: usize = 2 << 20;

/// Advises the whole huge pages inside the block at `ptr` of `size` bytes (the kernel maps a
/// huge page only where an aligned 2 MiB range lies inside the advised range).
fn advise(ptr: *mut u8, size: usize) {
    if ptr.is_null() || !(ADVISED_BYTES..=ADVISED_MAX_BYTES).contains(&size) {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + size) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: the range lies inside a block the allocator just handed out; MADV_HUGEPAGE
        // changes no contents and no mapping, only how later faults are served. Its result is
        // ignored: the advice is optional.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

// SAFETY: every call is the system allocator's own, on the same arguments; `advise` only adds
// advice on memory the call returned.
unsafe impl std::alloc::GlobalAlloc for LargeBlocksOnHugePages {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as the system allocator's contract.
        let p = unsafe { std::alloc::System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as the system allocator's contract.
        let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as the system allocator's contract.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the system allocator's contract.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[global_allocator]
static ALLOCATOR: LargeBlocksOnHugePages = LargeBlocksOnHugePages;

fn main() -> ExitCode {
    let cli = Cli::parse_args(std::env::args_os().collect());
    let result = run(cli);
    // Temporary copies of streams given as shards (`<(zcat a.gz)`).
    dp_audit::sources::shards::remove_stored_streams();
    match result {
        Ok(outcome) => {
            let mut out = std::io::stdout().lock();
            let written = out
                .write_all(outcome.stdout.as_bytes())
                .and_then(|()| out.flush());
            match written {
                // A reader that closed the pipe early (`audit list | head`) is not an error.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("audit: error: cannot write the result to stdout: {e}");
                    return ExitCode::from(2);
                }
                _ => {}
            }
            if let Some(err) = outcome.late_error {
                eprintln!("audit: error (after the verdict above): {err}");
                // A confirmed violation is the answer, whatever failed after it: exit 1, the
                // failure reported beside it. Otherwise the run has no complete answer.
                return ExitCode::from(if outcome.code == 1 { 1 } else { 2 });
            }
            ExitCode::from(outcome.code)
        }
        Err(err) => {
            // Every error's message already includes its cause (an OS error once, not twice as
            // a chain printer would show it).
            eprintln!("audit: error: {err}");
            ExitCode::from(2)
        }
    }
}
