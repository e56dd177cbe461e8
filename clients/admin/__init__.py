"""The admin client: AIOAdmin/Admin (``client.py``), the call machinery with deadlines and retries
(``calls.py``), and one mixin per family of calls (ACLs, groups, log dirs, partitions, ...)."""
