"""The Agent Client Protocol front-end (`agent-tui acp`): editors drive the engine over
stdio. Only protocol lives here: engine events become session updates, protocol
requests become engine commands. Inside this package `import acp` is the SDK."""
