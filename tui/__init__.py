"""The review app (``ctx review``): a Textual front end over the kernel facade."""
