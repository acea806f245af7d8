"""ctx's review app (Textual); it talks to the kernel only through ``kernel.Ctx``."""
