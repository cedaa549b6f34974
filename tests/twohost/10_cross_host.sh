# Cross-host READ and WRITE, 1 B to 64 MiB, through ioctl and io_uring, data
# verified by the side that did not move it; then the other direction.
# Connections stay up after their users exit: the reverse direction runs
# over the same one.
rc=0
th_start b target "$TH_XFER" export /ctl/x/cross.tok $((64 << 20))
th_run a "$TH_XFER" roundtrip /ctl/x/cross.tok $((64 << 20)) || rc=1
th_join b target 120 || rc=1
th_start a target "$TH_XFER" export /ctl/x/cross-back.tok $((4 << 20))
th_run b "$TH_XFER" roundtrip /ctl/x/cross-back.tok $((4 << 20)) || rc=1
th_join a target 120 || rc=1
exit $rc
