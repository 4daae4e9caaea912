"""Wall time of a job DAG: its critical path (unlimited workers), and a list schedule on limited ones."""

from __future__ import annotations

import heapq
from typing import Callable, Hashable, Sequence


def critical_path(order: Sequence[Hashable], before: dict, seconds: dict) -> tuple[float, list]:
    """The longest chain of jobs (`order` lists every job after those in `before[job]`): its seconds and jobs."""
    finish, chain = {}, {}
    for job in order:
        first = max(before[job], key=lambda j: finish[j], default=None)
        finish[job] = (finish[first] if first is not None else 0.0) + seconds[job]
        chain[job] = first
    if not finish:
        return 0.0, []
    last = max(order, key=lambda j: finish[j])
    path = [last]
    while chain[path[-1]] is not None:
        path.append(chain[path[-1]])
    return finish[last], path[::-1]


def schedule(order: Sequence[Hashable], before: dict, seconds: dict, pool: Callable[[Hashable], str],
             slots: dict[str, int]) -> float:
    """Wall seconds when each job, as soon as all of `before[job]` have finished, takes a free slot of its
    pool (`pool(job)`, `slots[pool]` of them; first ready, first started, in `order`), as a workflow
    engine with a job limit does."""
    rank = {job: i for i, job in enumerate(order)}
    waiting = {job: len(set(before[job])) for job in order}
    after: dict = {job: [] for job in order}
    for job in order:
        for first in set(before[job]):
            after[first].append(job)
    ready = sorted((job for job in order if not waiting[job]), key=rank.get)
    free = dict(slots)
    running: list = []  # (finish time, rank, job)
    now = 0.0
    while ready or running:
        for job in list(ready):
            if free[pool(job)] > 0:
                free[pool(job)] -= 1
                ready.remove(job)
                heapq.heappush(running, (now + seconds[job], rank[job], job))
        if not running:
            raise ValueError("a pool has no slots for its ready jobs")
        now, _, done = heapq.heappop(running)
        free[pool(done)] += 1
        for job in after[done]:
            waiting[job] -= 1
            if not waiting[job]:
                ready.append(job)
        ready.sort(key=rank.get)
    return now
