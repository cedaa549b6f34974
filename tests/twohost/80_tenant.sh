# Tenant isolation across the two hosts: on the initiator, process A
# writes 1 MiB into the target's export and reads it back, continuously,
# while process B on the same host and session loops 4 MiB WRITEs cancelled
# at once (each escalation kills the shared path), forged tokens and 1 ms
# CONNECTs (tests/integration/tenant_isolation.c with XFERK_TENANT_TOKEN).
# A sees no failure and every byte verified; B's calls end with documented
# results; at least one path died by a cancel.
rc=0
th_start b target "$TH_XFER" export /ctl/x/tenant.tok $((5 << 20))
th_wait_file "$TH_CTL/x/tenant.tok" 120 b || rc=1
th_run a env XFERK_TENANT_TOKEN=/ctl/x/tenant.tok \
	"$XFERK_BUILD/tests/integration/tenant_isolation" || rc=1
echo hold > "$TH_CTL/x/tenant.tok.done"
th_join b target 60 >/dev/null
exit $rc
