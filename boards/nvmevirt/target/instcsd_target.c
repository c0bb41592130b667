// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * instcsd_target.c — the InstCSD device core inside NVMeVirt.
 *
 * NVMeVirt keeps the PCI device, the queues, doorbells and interrupts, and
 * the standard admin set. This target hands each I/O command of the
 * namespace to instcsd_submit() on the dispatcher thread: the core runs it
 * to completion, moving its data with the DMA callbacks below at the PRP
 * addresses of the SQE (host memory is this kernel's memory), and the CQE's
 * status and DW0 go back through NVMeVirt's completion path. The command
 * completes at once (nsecs_target = its start): the core keeps its own
 * flash timing in its statistics, and NVMeVirt's delay model would time an
 * LBA transfer these commands do not make.
 */

#include <linux/highmem.h>
#include <linux/io.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <asm/unaligned.h>

#include "instcsd.h"
#include "instcsd_target.h"

/* The one device this module serves (NR_NAMESPACES is 1). */
static instcsd *csd;
/* Serializes calls into the core: admin and I/O come from different paths. */
static DEFINE_MUTEX(csd_lock);

/* Maps the page of bus address `addr` (this kernel's physical memory). */
static void *csd_map(u64 addr, bool *remapped)
{
	unsigned long pfn = addr >> PAGE_SHIFT;

	*remapped = false;
	if (pfn_valid(pfn))
		return kmap_local_pfn(pfn);
	*remapped = true;
	return memremap(addr & PAGE_MASK, PAGE_SIZE, MEMREMAP_WB);
}

static void csd_unmap(void *va, bool remapped)
{
	if (remapped)
		memunmap(va);
	else
		kunmap_local(va);
}

/* The core never asks for a range that crosses a 4 KiB page. */
static int csd_dma_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	bool remapped;
	void *va = csd_map(addr, &remapped);

	if (!va)
		return -EFAULT;
	memcpy(buf, va + offset_in_page(addr), len);
	csd_unmap(va, remapped);
	return 0;
}

static int csd_dma_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	bool remapped;
	void *va = csd_map(addr, &remapped);

	if (!va)
		return -EFAULT;
	memcpy(va + offset_in_page(addr), buf, len);
	csd_unmap(va, remapped);
	return 0;
}

/*
 * The core's global allocator. kvmalloc aligns to 8 bytes (and large
 * blocks to pages); a larger alignment takes `align` bytes more and keeps
 * the block's start just below the aligned pointer.
 */
static void *csd_alloc(void *ctx, size_t size, size_t align)
{
	void *raw;
	uintptr_t p;

	if (align <= sizeof(void *))
		return kvmalloc(size, GFP_KERNEL);
	raw = kvmalloc(size + align, GFP_KERNEL);
	if (!raw)
		return NULL;
	p = ALIGN((uintptr_t)raw + sizeof(void *), align);
	((void **)p)[-1] = raw;
	return (void *)p;
}

static void csd_free(void *ctx, void *p, size_t size, size_t align)
{
	if (!p)
		return;
	if (align <= sizeof(void *))
		kvfree(p);
	else
		kvfree(((void **)p)[-1]);
}

static uint64_t csd_now_ns(void *ctx)
{
	return ktime_get_ns();
}

/* No panic is expected (inputs are checked); if one comes, stop here. */
static void csd_panic(void *ctx, const char *msg, size_t len)
{
	pr_emerg("instcsd: panic in the device core: %.*s\n", (int)len, msg);
	BUG();
}

static const instcsd_env csd_env = {
	.ctx = NULL,
	.dma_read = csd_dma_read,
	.dma_write = csd_dma_write,
	.alloc = csd_alloc,
	.free = csd_free,
	.now_ns = csd_now_ns,
	.panic = csd_panic,
};

/* Runs one command on the core; false when the call itself failed. */
static bool csd_run(u16 sqid, const void *sqe, u16 *status, u32 *result0)
{
	u8 cqe[INSTCSD_CQE_SIZE];
	int rc;

	if (!csd)
		return false;
	mutex_lock(&csd_lock);
	rc = instcsd_submit(csd, sqid, sqe, cqe);
	mutex_unlock(&csd_lock);
	if (rc != INSTCSD_OK) {
		NVMEV_ERROR("instcsd_submit: %s\n", instcsd_strerror(rc));
		return false;
	}
	*result0 = get_unaligned_le32(cqe);
	*status = get_unaligned_le16(cqe + 14) >> 1;
	return true;
}

/* Whether the core serves `cmd`: the InstCSD opcodes (bit 7 set). */
static bool csd_vendor(const struct nvme_command *cmd)
{
	return cmd->common.opcode & 0x80;
}

/* Whether an NVM read or write stays inside the namespace. */
static bool csd_in_range(const struct nvme_command *cmd)
{
	u64 blocks = nvmev_vdev->ns[0].size >> LBA_BITS;
	u64 slba = le64_to_cpu(cmd->rw.slba);
	u64 nlb = (u64)le16_to_cpu(cmd->rw.length) + 1;

	return slba < blocks && nlb <= blocks - slba;
}

bool instcsd_moves_own_data(struct nvme_command *cmd)
{
	if (csd_vendor(cmd) || le32_to_cpu(cmd->common.nsid) != 1)
		return true;
	if (cmd->common.opcode == nvme_cmd_read || cmd->common.opcode == nvme_cmd_write)
		return !csd_in_range(cmd);
	return true;
}

bool instcsd_proc_nvme_io_cmd(struct nvmev_ns *ns, struct nvmev_request *req,
			      struct nvmev_result *ret)
{
	struct nvme_command *cmd = req->cmd;
	u16 status = NVME_SC_SUCCESS;
	u32 result0 = 0;

	if (csd_vendor(cmd)) {
		if (!csd_run(req->sq_id, cmd, &status, &result0)) {
			status = NVME_SC_INTERNAL | NVME_SC_DNR;
			result0 = 0;
		}
	} else if (le32_to_cpu(cmd->common.nsid) != 1) {
		status = NVME_SC_INVALID_NS | NVME_SC_DNR;
	} else if (cmd->common.opcode == nvme_cmd_read || cmd->common.opcode == nvme_cmd_write) {
		/* The namespace is also a plain block device in the reserved
		 * memory; NVMeVirt's worker copies the data. */
		if (!csd_in_range(cmd))
			status = NVME_SC_LBA_RANGE | NVME_SC_DNR;
	} else if (cmd->common.opcode != nvme_cmd_flush) {
		status = NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
	}
	ret->status = status;
	ret->result = result0;
	ret->nsecs_target = req->nsecs_start;
	return true;
}

bool instcsd_admin_cmd(struct nvme_command *sqe, u16 *status, u32 *result0)
{
	if (sqe->common.opcode != nvme_admin_get_log_page || sqe->get_log_page.lid != 0xC0)
		return false;
	if (!csd_run(0, sqe, status, result0)) {
		*status = NVME_SC_INTERNAL | NVME_SC_DNR;
		*result0 = 0;
	}
	return true;
}

/* Bytes an admin command NVMeVirt answers writes to host memory. */
static size_t csd_admin_data(const struct nvme_command *sqe)
{
	switch (sqe->common.opcode) {
	case nvme_admin_identify:
		return 4096;
	case nvme_admin_get_log_page:
		return ((((size_t)le16_to_cpu(sqe->get_log_page.numdu) << 16) |
			 le16_to_cpu(sqe->get_log_page.numdl)) + 1) << 2;
	default:
		return 0;
	}
}

void *instcsd_bounce_begin(struct nvme_command *sqe, u64 *saved_prp1)
{
	u64 prp1 = le64_to_cpu(sqe->common.prp1);
	size_t len = csd_admin_data(sqe);
	void *page;

	if (len == 0 || len > PAGE_SIZE || offset_in_page(prp1) + len <= PAGE_SIZE)
		return NULL;
	page = (void *)get_zeroed_page(GFP_KERNEL);
	if (!page)
		return NULL;
	*saved_prp1 = prp1;
	sqe->common.prp1 = cpu_to_le64(virt_to_phys(page));
	return page;
}

void instcsd_bounce_done(struct nvme_command *sqe, void *bounce, u64 saved_prp1)
{
	size_t len = csd_admin_data(sqe);
	size_t first = min_t(size_t, len, PAGE_SIZE - offset_in_page(saved_prp1));
	u64 prp2 = le64_to_cpu(sqe->common.prp2);

	sqe->common.prp1 = cpu_to_le64(saved_prp1);
	if (csd_dma_write(NULL, saved_prp1, bounce, first) ||
	    (len > first && csd_dma_write(NULL, prp2, bounce + first, len - first)))
		NVMEV_ERROR("instcsd: admin data to %#llx/%#llx not written\n", saved_prp1, prp2);
	free_page((unsigned long)bounce);
}

void instcsd_identify_vendor(void *ctrl)
{
	struct nvme_command id = {};
	void *page = (void *)get_zeroed_page(GFP_KERNEL);
	u16 status;
	u32 result0;

	if (!page)
		return;
	id.identify.opcode = nvme_admin_identify;
	id.identify.cns = cpu_to_le32(0x01);
	id.identify.prp1 = cpu_to_le64(virt_to_phys(page));
	if (csd_run(0, &id, &status, &result0) && status == 0)
		memcpy(ctrl + 3072, page + 3072, 1024);
	else
		NVMEV_ERROR("instcsd: Identify Controller failed (status %#x)\n", status);
	free_page((unsigned long)page);
}

void instcsd_init_namespace(struct nvmev_ns *ns, uint32_t id, uint64_t size, void *mapped_addr,
			    uint32_t cpu_nr_dispatcher)
{
	instcsd_config cfg = {
		.abi_version = INSTCSD_ABI_VERSION,
		.page_size = 16384,
		.geometry = INSTCSD_GEOMETRY_SIM,
		/* The simulated board's whole flash: 8 x 4 x 256 x 64 pages. */
		.ram_pages = 8 * 4 * 256 * 64,
		.max_streams = 4096,
		.mdts_bytes = 2 << 20,
	};
	int rc;

	ns->id = id;
	ns->csi = NVME_CSI_NVM;
	ns->size = size;
	ns->mapped = mapped_addr;
	ns->proc_io_cmd = instcsd_proc_nvme_io_cmd;

	rc = instcsd_create(&csd_env, &cfg, &csd);
	if (rc != INSTCSD_OK) {
		csd = NULL;
		NVMEV_ERROR("instcsd_create: %s\n", instcsd_strerror(rc));
		return;
	}
	NVMEV_INFO("InstCSD device core %u (ABI) ready on namespace %u\n",
		   instcsd_abi_version(), id + 1);
}

void instcsd_remove_namespace(struct nvmev_ns *ns)
{
	mutex_lock(&csd_lock);
	instcsd_destroy(csd);
	csd = NULL;
	mutex_unlock(&csd_lock);
}
