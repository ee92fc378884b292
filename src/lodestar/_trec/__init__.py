"""TREC qrels and runs: reading, joining, bucketing and evaluating, one module per job.

* :mod:`.read` reads a qrels or run file (plain or gzip) into dictionary-encoded
  columns, refusing malformed input with the file and line.
* :mod:`.join` labels each retrieved document from the qrels and groups both
  files by evaluated query.
* :mod:`.batches` cuts the per-query lists into padded batches of a few widths.
* :mod:`.names` reads measure names (lodestar's and trec_eval's) into requests
  against the registry of measures.
* :mod:`.families` is the table of trec_eval's names for each measure of the
  registry.
* :mod:`.evaluate` evaluates every requested measure of a batch in one jitted
  kernel over one ranking, and averages per query the way trec_eval does.
"""
