# Cross-host transfers of dma-buf regions (vgem's page-backed buffers,
# XFERK_XFER_DMABUF=1): the initiator's dma-bufs against a host region on
# the target, READ and WRITE from 1 B to 64 MiB through ioctl and io_uring,
# every byte checked through the buffers' own CPU mappings on the host that
# did not move it; then dma-buf to dma-buf, the target's an export of a
# dma-buf region (1 MiB: soft-RoCE fast-registers 512 pages).
rc=0
th_start b target "$TH_XFER" export /ctl/x/dmabuf-host.tok $((64 << 20))
th_run a env XFERK_XFER_DMABUF=1 "$TH_XFER" roundtrip /ctl/x/dmabuf-host.tok \
	$((64 << 20)) || rc=1
th_join b target 120 || rc=1
th_start b target env XFERK_XFER_DMABUF=1 "$TH_XFER" export \
	/ctl/x/dmabuf-dmabuf.tok $((1 << 20))
th_run a env XFERK_XFER_DMABUF=1 "$TH_XFER" roundtrip /ctl/x/dmabuf-dmabuf.tok \
	$((1 << 20)) || rc=1
th_join b target 120 || rc=1
exit $rc
