"""Cost models for large-model training: shapes, FLOPs, memory, communication, pipelines, planner.

See costmodels/llm/shapes.py for the three inputs every function takes: the transformer's shape,
the parallel layout and the cluster.
"""
