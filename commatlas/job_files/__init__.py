"""The user's own job files in and out (issue 41): a torchtitan TOML, a Megatron-LM command line,
a DeepSpeed config JSON or an Accelerate FSDP YAML read as the flags of ``predict-llm`` /
``plan-llm`` (``--from FILE``), and a planned layout written back (``plan-llm --emit``).

Each reader turns one file into a :class:`commatlas.job_files.report.JobFile`: the flag values it
found, every field it read, every field it ignored and why, and every default it assumed. The
readers read through costmodels.limits.read_text_bounded and tomllib / json / the bounded YAML
loader; :mod:`commatlas.job_files.apply` merges a JobFile into the parsed arguments (explicit
flags win) and :mod:`commatlas.job_files.emit` writes a layout back.
"""
