# Notifications across two hosts: the initiator (host b) writes every 4 KiB
# slot of the target's (host a) export, each op notifying; the target takes
# the events as they come and checks each arrives once, in order, after its
# data.
TH_N=$XFERK_BUILD/tests/integration/notify
rc=0
th_start b initiator "$TH_N" initiator /ctl/x/notify 10000
th_run a "$TH_N" target /ctl/x/notify 10000 || rc=1
th_join b initiator 60 || rc=1
exit $rc
