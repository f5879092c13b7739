"""What the gateway sees, for the tools people already read runs with: OpenTelemetry traces (`tracing`,
`spans`), Prometheus metrics (`metrics`), and recorded runs sent as traces after the fact (`export`).

Everything here works from the finished call-log records (recorder.calllog, llm.call_record): the same record
makes the live span and the exported one, and nothing runs on a call's path unless telemetry is switched on
(`observed.ObservedCallLog` replaces the call log then). The other parts import nothing from here.
"""
