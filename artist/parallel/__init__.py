"""What one training step is: parallel plans and step graphs (graph.py), DDP (ddp.py)."""
