/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * instcsd_target.h — the InstCSD as an NVMeVirt target: every I/O
 * command of its namespace and the InstCSD admin pages go to the device
 * core (libinstcsd_cabi, x86_64-unknown-none), which moves its data with
 * the PRPs in the SQE and returns the CQE.
 */
#ifndef INSTCSD_TARGET_H
#define INSTCSD_TARGET_H

#include "nvmev.h"

bool instcsd_proc_nvme_io_cmd(struct nvmev_ns *ns, struct nvmev_request *req,
			      struct nvmev_result *ret);
void instcsd_init_namespace(struct nvmev_ns *ns, uint32_t id, uint64_t size, void *mapped_addr,
			    uint32_t cpu_nr_dispatcher);
void instcsd_remove_namespace(struct nvmev_ns *ns);

/*
 * Whether the target moves (or refuses) `cmd`'s data itself, so that
 * NVMeVirt's I/O worker must not copy for it: the InstCSD commands, and
 * NVM commands on another namespace or outside this one.
 */
bool instcsd_moves_own_data(struct nvme_command *cmd);

/*
 * Admin commands the device core answers: Get Log Page of the InstCSD
 * statistics (LID C0h). Returns true when it took the command, with the
 * CQE's status field (shifted down) and DW0.
 */
bool instcsd_admin_cmd(struct nvme_command *sqe, u16 *status, u32 *result0);

/*
 * After NVMeVirt's own Identify Controller filled `ctrl` (one 4 KiB page):
 * puts the device core's vendor-specific area (bytes 3072-4095: the
 * InstCSD capability block) there, so the kernel driver sees NVMeVirt's
 * controller fields and applications see the capability block.
 */
void instcsd_identify_vendor(void *ctrl);

/*
 * NVMeVirt's admin handlers write their data at PRP1's kernel address,
 * one page on, so data that starts inside a page and crosses it (a user
 * buffer that is not page aligned, through the kernel's passthrough)
 * would spill into whatever page follows in physical memory. For such a
 * command (Identify, or a log page of at most one page) this swaps PRP1
 * for a page of its own while NVMeVirt runs it, and returns that page;
 * instcsd_bounce_done() then writes it out through PRP1 and PRP2 and
 * puts PRP1 back. NULL when nothing needs it.
 */
void *instcsd_bounce_begin(struct nvme_command *sqe, u64 *saved_prp1);
void instcsd_bounce_done(struct nvme_command *sqe, void *bounce, u64 saved_prp1);

#endif
