//! The edits that add the InstCSD target to NVMeVirt's source (commit
//! 61c90f7): a base configuration `INSTCSD_PROTOTYPE` with one namespace
//! of type `SSD_TYPE_INSTCSD`, its objects in the Kbuild, its namespace in
//! `main.c`, its commands kept from the I/O worker's copy in `io.c`, and
//! the InstCSD admin pages in `admin.c`. Each edit must match exactly once,
//! so a different NVMeVirt fails loudly instead of building something else.

/// (file, text to find, its replacement).
pub(super) const EDITS: &[(&str, &str, &str)] = &[
    (
        "ssd_config.h",
        r#"#define WD_ZN540 4
"#,
        r#"#define WD_ZN540 4
#define INSTCSD_PROTOTYPE 5
"#,
    ),
    (
        "ssd_config.h",
        r#"#define SSD_TYPE_KV 3
"#,
        r#"#define SSD_TYPE_KV 3
#define SSD_TYPE_INSTCSD 4
"#,
    ),
    (
        "ssd_config.h",
        r#"#elif (BASE_SSD == KV_PROTOTYPE)
"#,
        r#"#elif (BASE_SSD == INSTCSD_PROTOTYPE)
#define NR_NAMESPACES 1

#define NS_SSD_TYPE_0 SSD_TYPE_INSTCSD
#define NS_CAPACITY_0 (0)
#define NS_SSD_TYPE_1 NS_SSD_TYPE_0
#define NS_CAPACITY_1 (0)
#define MDTS (9)
#define CELL_MODE (CELL_MODE_UNKNOWN)

#define LBA_BITS (9)
#define LBA_SIZE (1 << LBA_BITS)

#elif (BASE_SSD == KV_PROTOTYPE)
"#,
    ),
    (
        "Kbuild",
        r#"CONFIG_NVMEVIRT_NVM := y
"#,
        r#"#CONFIG_NVMEVIRT_NVM := y
CONFIG_NVMEVIRT_INSTCSD := y
"#,
    ),
    (
        "Kbuild",
        r#"ccflags-$(CONFIG_NVMEVIRT_KV) += -DBASE_SSD=KV_PROTOTYPE
"#,
        r#"ccflags-$(CONFIG_NVMEVIRT_KV) += -DBASE_SSD=KV_PROTOTYPE

ccflags-$(CONFIG_NVMEVIRT_INSTCSD) += -DBASE_SSD=INSTCSD_PROTOTYPE
nvmev-$(CONFIG_NVMEVIRT_INSTCSD) += instcsd_target.o instcsd_core.o
"#,
    ),
    (
        "main.c",
        r#"#include "nvmev.h"
"#,
        r#"#include "nvmev.h"
#if (BASE_SSD == INSTCSD_PROTOTYPE)
#include "instcsd_target.h"
#endif
"#,
    ),
    (
        "main.c",
        r#"		else if (NS_SSD_TYPE(i) == SSD_TYPE_KV)
			kv_init_namespace(&ns[i], i, size, ns_addr, disp_no);
"#,
        r#"		else if (NS_SSD_TYPE(i) == SSD_TYPE_KV)
			kv_init_namespace(&ns[i], i, size, ns_addr, disp_no);
#if (BASE_SSD == INSTCSD_PROTOTYPE)
		else if (NS_SSD_TYPE(i) == SSD_TYPE_INSTCSD)
			instcsd_init_namespace(&ns[i], i, size, ns_addr, disp_no);
#endif
"#,
    ),
    (
        "main.c",
        r#"		else if (NS_SSD_TYPE(i) == SSD_TYPE_KV)
			kv_remove_namespace(&ns[i]);
"#,
        r#"		else if (NS_SSD_TYPE(i) == SSD_TYPE_KV)
			kv_remove_namespace(&ns[i]);
#if (BASE_SSD == INSTCSD_PROTOTYPE)
		else if (NS_SSD_TYPE(i) == SSD_TYPE_INSTCSD)
			instcsd_remove_namespace(&ns[i]);
#endif
"#,
    ),
    (
        "io.c",
        r#"#include "dma.h"
"#,
        r#"#include "dma.h"
#if (BASE_SSD == INSTCSD_PROTOTYPE)
#include "instcsd_target.h"
#endif
"#,
    ),
    (
        "io.c",
        r#"	uint32_t nsid = cmd->common.nsid - 1;
#endif
"#,
        r#"	uint32_t nsid = cmd->common.nsid - 1;
#endif
#if (BASE_SSD == INSTCSD_PROTOTYPE)
	/* Any namespace id: the target answers one it does not have. */
	if (nsid >= nvmev_vdev->nr_ns)
		nsid = 0;
#endif
"#,
    ),
    (
        "io.c",
        r#"				if (w->is_internal) {
					;
				} else if (io_using_dma) {"#,
        r#"				if (w->is_internal) {
					;
#if (BASE_SSD == INSTCSD_PROTOTYPE)
				} else if (instcsd_moves_own_data(
						   &nvmev_vdev->sqes[w->sqid]->sq[SQ_ENTRY_TO_PAGE_NUM(w->sq_entry)]
									  [SQ_ENTRY_TO_PAGE_OFFSET(w->sq_entry)])) {
					;
#endif
				} else if (io_using_dma) {"#,
    ),
    (
        "admin.c",
        r#"#include "zns_ftl.h"
"#,
        r#"#include "zns_ftl.h"
#if (BASE_SSD == INSTCSD_PROTOTYPE)
#include "instcsd_target.h"
#endif
"#,
    ),
    (
        "admin.c",
        r#"	ctrl->sqes = 0x66;
	ctrl->cqes = 0x44;
"#,
        r#"	ctrl->sqes = 0x66;
	ctrl->cqes = 0x44;
#if (BASE_SSD == INSTCSD_PROTOTYPE)
	instcsd_identify_vendor(ctrl);
#endif
"#,
    ),
    (
        "admin.c",
        r#"	NVMEV_DEBUG("%s: %d 0x%x 0x%x\n", __func__, entry_id,
			sqe->common.opcode, sqe->common.command_id);
"#,
        r#"	NVMEV_DEBUG("%s: %d 0x%x 0x%x\n", __func__, entry_id,
			sqe->common.opcode, sqe->common.command_id);
#if (BASE_SSD == INSTCSD_PROTOTYPE)
	{
		u16 status;
		u32 result0;

		if (instcsd_admin_cmd(sqe, &status, &result0)) {
			__make_cq_entry_results(entry_id, status, result0, 0);
			return;
		}
	}
	u64 saved_prp1 = 0;
	void *bounce = instcsd_bounce_begin(sqe, &saved_prp1);
#endif
"#,
    ),
    (
        "admin.c",
        r#"		NVMEV_ERROR("Unhandled admin requests: %d", sqe->common.opcode);
		break;
	}
}
"#,
        r#"		NVMEV_ERROR("Unhandled admin requests: %d", sqe->common.opcode);
		break;
	}
#if (BASE_SSD == INSTCSD_PROTOTYPE)
	if (bounce)
		instcsd_bounce_done(sqe, bounce, saved_prp1);
#endif
}
"#,
    ),
];

/// Applies [`EDITS`] to the source tree at `dir`.
pub(super) fn apply(dir: &std::path::Path) -> Result<(), String> {
    for (file, old, new) in EDITS {
        let path = dir.join(file);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let found = text.matches(old).count();
        if found != 1 {
            return Err(format!(
                "{}: the text to patch occurs {found} times (expected once): is this NVMeVirt 61c90f7?\n{old}",
                path.display()
            ));
        }
        std::fs::write(&path, text.replacen(old, new, 1))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every edit adds the target's own text and keeps every line it
    /// found, in order (a line it turns off stays, commented out with `#`).
    #[test]
    fn every_edit_adds_the_target() {
        for (file, old, new) in EDITS {
            assert!(!old.is_empty(), "{file}: empty text to find");
            assert!(
                new.contains("INSTCSD") || new.contains("instcsd"),
                "{file}: {new}"
            );
            let mut lines = new.lines();
            for line in old.lines() {
                let kept = lines.any(|l| l == line || l.strip_prefix('#') == Some(line));
                assert!(kept, "{file}: the edit drops `{line}`");
            }
        }
    }

    /// A tree that is not the expected NVMeVirt is refused, naming the
    /// file, rather than half patched silently.
    #[test]
    fn a_different_tree_is_refused() {
        let dir = std::env::temp_dir().join(format!("nvmevirt-patch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("ssd_config.h"),
            "#define WD_ZN540 4\n#define WD_ZN540 4\n",
        )
        .unwrap();
        let err = apply(&dir).unwrap_err();
        assert!(
            err.contains("ssd_config.h") && err.contains("2 times"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
