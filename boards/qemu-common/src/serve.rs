//! Boot to shutdown: heap, console, boot arguments, the board link, the
//! device core on a [`LinkBoard`], and QEMU's exit status (0 when the host
//! stopped the device; non-zero for any failure, as a panic has).

use core::ffi::CStr;
use core::fmt::Write;

use board_openssd::mmio::Mmio;
use board_openssd::uart::{CadenceUart, WINDOW as UART_WINDOW};
use board_ram::{LinkBoard, LinkHost, RamNand, device_config};
use firmware::Device;
use firmware::hal::{Clock, SoftEngine};
use ftl::Geometry;
use semihosting::fs::File;
use semihosting::process::exit;

use crate::cmdline::{BootArgs, SelfTest};
use crate::link::SemiLink;

/// Exit status: bad boot arguments.
const EXIT_ARGS: i32 = 2;
/// Exit status: the link could not be opened or failed.
const EXIT_LINK: i32 = 3;
/// Exit status: the device core failed.
const EXIT_DEVICE: i32 = 4;

/// What a QEMU board is.
#[derive(Debug)]
pub struct Board {
    /// Name on the console and in Identify.
    pub name: &'static str,
    /// Board id in the link's Hello.
    pub id: u16,
    /// Flash geometry (its page size is the default).
    pub geometry: Geometry,
    /// Heap: start and size in bytes.
    pub heap: (usize, usize),
    /// MMIO base of the console UART.
    pub uart_base: usize,
    /// MMIO base of the UART that carries defmt log frames.
    pub log_uart_base: usize,
}

/// Runs the board until the host stops it; never returns.
pub fn serve<C: Clock>(board: &Board, clock: C) -> ! {
    // SAFETY: each board's `heap` range is DRAM past its image and stacks
    // (see the board's memory map), and this is the first allocation.
    #[allow(unsafe_code)]
    unsafe {
        crate::heap::init(board.heap.0, board.heap.1)
    };
    // SAFETY: the board's console UART, mapped as device memory; only
    // this function drives it.
    #[allow(unsafe_code)]
    let mut uart = CadenceUart::new(unsafe { Mmio::new(board.uart_base, UART_WINDOW) });
    // SAFETY: the board's second UART, mapped as device memory, used only
    // by the logger.
    #[allow(unsafe_code)]
    unsafe {
        crate::logger::init(board.log_uart_base)
    };
    defmt::info!("{=str} firmware booted", board.name);
    let _ = writeln!(
        uart,
        "InstCSD firmware {} on {} (QEMU)",
        env!("CARGO_PKG_VERSION"),
        board.name
    );
    let args = match semihosting::experimental::env::args::<1024>() {
        Ok(a) => a,
        Err(_) => fail(&mut uart, EXIT_ARGS, "cannot read the boot arguments"),
    };
    let words = (&args).filter_map(Result::ok);
    let boot = match BootArgs::parse(words, board.geometry.page_size) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(uart, "bad boot arguments: {e:?}");
            exit(EXIT_ARGS)
        }
    };
    match boot.selftest {
        Some(SelfTest::Panic) => panic!("selftest: a deliberate panic"),
        Some(SelfTest::Undef) => {
            let _ = writeln!(uart, "selftest: an undefined instruction");
            // SAFETY: `udf` raises an undefined-instruction exception, whose
            // handler exits QEMU; nothing after it runs.
            #[allow(unsafe_code)]
            unsafe {
                core::arch::asm!("udf #0", options(nomem, nostack))
            };
            fail(&mut uart, EXIT_DEVICE, "selftest: udf returned")
        }
        None => {}
    }
    let open = |p: &crate::cmdline::CPath, write: bool| {
        let c = CStr::from_bytes_with_nul(p.with_nul()).ok()?;
        if write {
            File::create(c)
        } else {
            File::open(c)
        }
        .ok()
    };
    let Some(rx) = open(&boot.to_dev, false) else {
        fail(&mut uart, EXIT_LINK, "cannot open the host-to-device pipe")
    };
    let Some(tx) = open(&boot.from_dev, true) else {
        fail(&mut uart, EXIT_LINK, "cannot open the device-to-host pipe")
    };
    let host = match LinkHost::connect(SemiLink { rx, tx }, board.id) {
        Ok(h) => h,
        Err(e) => {
            let _ = writeln!(uart, "board link: {e:?}");
            exit(EXIT_LINK)
        }
    };
    let geo = Geometry {
        page_size: boot.page_size,
        ..board.geometry
    };
    // Half the heap for programmed pages, the rest for the core.
    let max_pages = board.heap.1 / 2 / boot.page_size as usize;
    let dram_budget = (board.heap.1 / 8) as u64;
    let _ = writeln!(
        uart,
        "geometry {}ch x {}w, {} B pages; RAM for {max_pages} pages",
        geo.channels, geo.ways, geo.page_size
    );
    let b = LinkBoard {
        host,
        nand: RamNand::new(geo, max_pages, 8),
        engine: SoftEngine::default(),
        clock,
    };
    let cfg = device_config(geo, dram_budget, board.name, "InstCSD firmware under QEMU");
    // Through the sequence journal, as every board boots.
    let mut dev = match Device::boot(b, cfg) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(uart, "device core: {e}");
            exit(EXIT_DEVICE)
        }
    };
    match dev.run_until_idle() {
        Ok(n) if dev.board().host.shutdown_requested() => {
            defmt::info!("served {=usize} commands; host said stop", n);
            let _ = writeln!(uart, "served {n} commands; host said stop");
            exit(0)
        }
        Ok(n) => {
            let _ = writeln!(uart, "idle after {n} commands without a stop");
            exit(EXIT_DEVICE)
        }
        Err(e) => {
            let _ = writeln!(uart, "device core: {e}");
            exit(EXIT_DEVICE)
        }
    }
}

fn fail(uart: &mut CadenceUart<Mmio>, code: i32, what: &str) -> ! {
    let _ = writeln!(uart, "{what}");
    exit(code)
}
