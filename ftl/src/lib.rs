//! Flash translation layer of the InstInfer computational SSD.
//!
//! The KV cache of every attention head (a *stream*: one head of one
//! sequence of one layer) is kept twice on flash:
//!
//! * token-indexed pages: `T = page_size / (2·head_dim)` consecutive tokens
//!   of K (or V) per page, row-major `[token][head_dim]` fp16, group `g`
//!   striped to die `g + stream` (channels first) so one head's groups are
//!   read from all channels in parallel (token_map.rs, placement.rs);
//! * a hidden-dim-indexed copy of K: `N = page_size / (2·m)` tokens of `m`
//!   dims per page, dim-major `[m][N]` (dim_map.rs).
//!
//! Writes are block-batched: each die has one open block that takes pages
//! of all streams in order (writer.rs). Tokens not yet filling a page wait
//! in DRAM group buffers bounded by a budget; when it is exceeded, partial
//! pages are written and later superseded by merging (group_buffer.rs,
//! budget.rs). Dead blocks are erased (reclaim.rs); blocks pinned by a few
//! live pages are collected and worn blocks levelled (gc.rs); failed
//! blocks are retired and their data re-placed (bad_blocks.rs).
//!
//! The FTL never touches NAND: it queues [`FlashOp`]s that the firmware
//! drains, executes in order and reports failures of.
//!
//! | module | owns |
//! | --- | --- |
//! | `ftl` | [`Ftl`] and its public API: configuration, stream life cycle, appends, the op queue hand-off, read-side lookups |
//! | `geometry` | [`Geometry`]: channels, ways, blocks, pages, page bytes, and the channel-first die numbering |
//! | `address` | physical addresses: a page ([`Ppa`]) and an erase block ([`BlockAddr`]) |
//! | `stream` | stream identity and shape ([`StreamId`], [`StreamShape`]) |
//! | `stream_state` | per-stream metadata: shape, length, token and dim maps, DRAM tails, what is persisted |
//! | `token_map` | the token-indexed mapping of one stream's K (or V): token group → page |
//! | `dim_map` | the hidden-dim-indexed mapping of one stream's K copy: (dim block, run) → page |
//! | `placement` | which die a page goes to (striping one head over all channels) |
//! | `allocator` | block and page bookkeeping: block states, erase and valid-page counts, the open block per die |
//! | `writer` | block-batched writing: group buffers into page programs |
//! | `group_buffer` | device-DRAM group buffers and the page-image builders |
//! | `budget` | append planning: the DRAM budget and flash capacity checks that make an append all-or-nothing |
//! | `reclaim` | erasing dead blocks back into their die's free pool |
//! | `gc` | garbage collection (greedy or cost-benefit victims, low and critical watermarks, the relocation reserve) and static wear levelling |
//! | `lend` | blocks lent to the firmware's journal from the free pool, and given back |
//! | `wear` | the wear record (erase counts, retired blocks) the firmware keeps across power cuts |
//! | `bad_blocks` | bad blocks: factory ones never allocated, failed ones retired and their pages re-placed |
//! | `op` | [`FlashOp`]s the FTL emits and the [`Merge`] descriptor of a superseded page |
//! | `op_queue` | the queue of flash operations between the FTL and the firmware |
//! | `spans` | read-side answers: where a token group's or dim run's tokens are, on flash and in DRAM |
//! | `audit` | [`Ftl::audit`]: a self-check of the maps, block counts, pools and DRAM accounting ([`AuditError`]) |
//! | `stats` | counters and the [`FtlStats`] snapshot |
//! | `error` | [`FtlError`], the crate's one error type |

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod address;
mod allocator;
mod audit;
mod bad_blocks;
mod budget;
mod dim_map;
mod error;
mod ftl;
mod gc;
mod geometry;
mod group_buffer;
mod lend;
mod op;
mod op_queue;
mod placement;
mod reclaim;
mod spans;
mod stats;
mod stream;
mod stream_state;
mod token_map;
mod wear;
mod writer;

#[cfg(test)]
mod testnand;
#[cfg(test)]
mod tests;

pub use address::{BlockAddr, Ppa};
pub use audit::AuditError;
pub use error::FtlError;
pub use ftl::{Ftl, FtlConfig, MAX_STREAMS};
pub use gc::{GcConfig, GcPolicy, GcReport};
pub use geometry::{Geometry, MAX_PAGES_PER_BLOCK, MAX_TOTAL_BLOCKS};
pub use op::{FlashOp, Merge, MergeLayout};
pub use spans::{DimSpan, GroupSpans, RunSpans};
pub use stats::FtlStats;
pub use stream::{Kind, StreamId, StreamShape};
pub use wear::RETIRED;
