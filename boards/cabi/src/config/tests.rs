use super::*;
use alloc::format;

fn raw(page_size: u32) -> RawConfig {
    RawConfig::new(page_size, 1024)
}

fn err(r: RawConfig) -> ConfigError {
    Config::from_raw(&r).expect_err("must be refused")
}

fn chars<const N: usize>(s: &[u8]) -> [core::ffi::c_char; N] {
    let mut out = [0; N];
    for (o, &b) in out.iter_mut().zip(s) {
        *o = b as core::ffi::c_char;
    }
    out
}

#[test]
fn zero_fields_take_the_defaults() {
    let c = Config::from_raw(&raw(4096)).unwrap();
    let d = Config::new(4096).unwrap();
    assert_eq!(c.geometry, Geometry::sim_default(4096));
    assert_eq!(c.ram_pages, 1024);
    assert_eq!(
        Config {
            ram_pages: 1024,
            ..d
        },
        c
    );
    assert_eq!(&c.identity.serial[..9], b"EMU-0001 ");
}

#[test]
fn the_device_config_mirrors_the_simulated_board() {
    for page in [4096, 16384] {
        let sim = board_sim::SimConfig::new(page).device_config();
        let mut ours = Config::new(page).unwrap().device_config();
        assert_ne!(ours.identity, sim.identity);
        ours.identity = sim.identity.clone();
        assert_eq!(format!("{ours:?}"), format!("{sim:?}"));
    }
}

#[test]
fn presets_and_custom_geometry() {
    let mut r = raw(16384);
    r.geometry = abi::GEOMETRY_DAISYPLUS;
    assert_eq!(
        Config::from_raw(&r).unwrap().geometry,
        Geometry::daisyplus()
    );
    r.geometry = abi::GEOMETRY_COSMOS_PLUS;
    assert_eq!(
        Config::from_raw(&r).unwrap().geometry,
        Geometry::cosmos_plus()
    );
    let mut r = raw(4096);
    r.geometry = abi::GEOMETRY_CUSTOM;
    (r.channels, r.ways, r.blocks_per_die, r.pages_per_block) = (2, 2, 16, 32);
    let c = Config::from_raw(&r).unwrap();
    assert_eq!((c.geometry.dies(), c.geometry.pages_per_block), (4, 32));
}

#[test]
fn every_bad_field_is_refused() {
    let mut r = raw(4096);
    r.abi_version = 2;
    assert!(matches!(err(r), ConfigError::AbiVersion(2)));
    assert!(matches!(err(raw(8192)), ConfigError::PageSize(8192)));
    let mut r = raw(4096);
    r.geometry = abi::GEOMETRY_DAISYPLUS;
    assert!(matches!(
        err(r),
        ConfigError::PresetPageSize {
            page_size: 16384,
            ..
        }
    ));
    let mut r = raw(4096);
    r.ways = 2;
    assert!(matches!(err(r), ConfigError::GeometryFieldWithPreset));
    let mut r = raw(4096);
    r.geometry = 9;
    assert!(matches!(err(r), ConfigError::UnknownGeometry(9)));
    let mut r = raw(4096);
    r.geometry = abi::GEOMETRY_CUSTOM;
    (r.channels, r.ways, r.blocks_per_die, r.pages_per_block) = (0, 2, 16, 32);
    assert!(matches!(err(r), ConfigError::Geometry));
    let mut r = raw(4096);
    r.ram_pages = 0;
    assert!(matches!(err(r), ConfigError::RamPages { given: 0, .. }));
    r.ram_pages = 8 * 4 * 256 * 64 + 1;
    assert!(matches!(err(r), ConfigError::RamPages { max: 524_288, .. }));
    let mut r = raw(4096);
    r.dram_budget_bytes = 100;
    assert!(matches!(err(r), ConfigError::DramBudget(100)));
    let mut r = raw(4096);
    r.max_sequences = MAX_SEQUENCES + 1;
    assert!(matches!(err(r), ConfigError::MaxSequences(_)));
    let mut r = raw(4096);
    r.max_streams = ftl::MAX_STREAMS + 1;
    assert!(matches!(err(r), ConfigError::MaxStreams(_)));
    for bad in [2048, 12288, 512 << 20] {
        let mut r = raw(4096);
        r.mdts_bytes = bad;
        assert!(matches!(err(r), ConfigError::Mdts(m) if m == bad));
    }
    let mut r = raw(4096);
    r.reserved1 = 1;
    assert!(matches!(err(r), ConfigError::Reserved("reserved1")));
}

#[test]
fn identify_strings_are_checked_and_padded() {
    let mut r = raw(4096);
    r.serial = chars(b"ABC-7");
    r.model = chars(b"My emulator");
    r.firmware_rev = chars(b"12345678");
    r.vendor_id = 0x1234;
    let c = Config::from_raw(&r).unwrap();
    assert_eq!(&c.identity.serial, b"ABC-7               ");
    assert_eq!(&c.identity.model[..12], b"My emulator ");
    assert_eq!(&c.identity.firmware_rev, b"12345678");
    assert_eq!(c.identity.vendor_id, 0x1234);
    let mut r = raw(4096);
    r.serial = chars(b"AB\0C");
    assert!(matches!(err(r), ConfigError::Text("serial")));
    let mut r = raw(4096);
    r.model = chars(b"tab\there");
    assert!(matches!(err(r), ConfigError::Text("model")));
}
