"""Pollux (Qiao et al., OSDI'21): co-adaptive, goodput-driven scheduling of elastic jobs.

- throughput.py: the 7-parameter throughput model (Eq. 8-11) and its L-BFGS-B fit with priors
- goodput.py: goodput of a configuration and the best (m, s) under the memory limit (Eq. 4, 13)
- agent.py: PolluxAgent, one job's learner: observations -> fitted model, 2x GPU cap, goodput
- scheduler.py: PolluxSched, FITNESS_p over node-level allocation matrices searched by NSGA-II

Everything here learns from measurements a job could make; nothing imports the network model.
"""
