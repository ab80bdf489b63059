"""The measurement corpus of the training model: one loader for every dev set (corpus.py), the
fit with a row filter and leave-one-source-out refits (loso.py), flat baselines, error bands."""
