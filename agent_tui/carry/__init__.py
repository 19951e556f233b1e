"""What code, not the summariser, carries across a summary (below step/, which restates
it, and context/, which stores it): the person's words (`restate`), the pinned messages
(`pins`), the file ledger (`ledger`), and how they are stored on a summary (`carried`)."""
