"""The Deployment controller: ``controller`` (handlers, sync, ReplicaSet writes), ``rollout`` (rolling and
recreate strategies, rollout status) and ``util`` (the pure rules both use)."""

from controllers.deployment.controller import DeploymentController

__all__ = ["DeploymentController"]
