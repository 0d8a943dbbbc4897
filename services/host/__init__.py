"""The agent host's face: skills bound from a folder, their tools in a provider's shape, and a
call by tool name through the same translation, checks and gates as `skillpress call`
(`skillpress.SkillHost`). A face of its own beside the command line and MCP: it reaches the
core through the application layer only."""

from skillpress.services.host.skill_host import GateClosed, SkillHost

__all__ = ["GateClosed", "SkillHost"]
