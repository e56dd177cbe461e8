"""The Odradek web console: an admin client of the cluster serving JSON endpoints and a plain HTML/JS front
end (``odradek-console``). It imports ``protocol`` and ``clients`` only; it never runs inside a broker."""
