# The seed-002 experiment (Mooncake's sync batch fix) across two hosts: a
# batch of a 4 KiB WRITE the target refuses (its export was revoked) and a
# 16 MiB valid WRITE; right after the call returns the initiator overwrites
# its source. The target counts, per round, the words of post-return data
# that reached its memory: the naive wrapper (two ops, return at the first
# failure) lets it through, xferk_transfer_sync() never does. The refused
# write kills the path each round; the naive wrapper's big op is posted
# again on the next one, carrying the new data.
rc=0
th_start b target "$TH_XFER" quiesce-target /ctl/x/q $((16 << 20)) 6
th_run a "$TH_XFER" quiesce /ctl/x/q $((16 << 20)) 6 || rc=1
th_join b target 60 || rc=1
exit $rc
