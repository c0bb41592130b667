// Testbench for the generated WeightedSum (target/hdl/weighted_sum.v, 8 lanes).
//
// Reads one line per clock from +vectors=<file>:
//   start d v_valid p f_valid alpha v0..v7 vm0..vm7  (hex)
// applies it, gives one rising edge, and after the edge writes each
// finish beat's outputs to +out=<file> as "<clock> <o0> … <o7>" (decimal
// clock, hex i32 bits), the sampling point of hdl::sim::tick.
// tests/verilog_cosim.rs compares it with attention::engine::finish.
`timescale 1ns / 1ps
module weighted_sum_tb;
    reg clock = 1'b0;
    reg start = 1'b0;
    reg [8:0] d = 9'd0;
    reg v_valid = 1'b0;
    reg [31:0] p = 32'd0;
    reg f_valid = 1'b0;
    reg [31:0] alpha = 32'd0;
    reg [15:0] v0 = 16'd0, v1 = 16'd0, v2 = 16'd0, v3 = 16'd0;
    reg [15:0] v4 = 16'd0, v5 = 16'd0, v6 = 16'd0, v7 = 16'd0;
    reg [31:0] m0 = 32'd0, m1 = 32'd0, m2 = 32'd0, m3 = 32'd0;
    reg [31:0] m4 = 32'd0, m5 = 32'd0, m6 = 32'd0, m7 = 32'd0;
    wire out_valid;
    wire [31:0] o0, o1, o2, o3, o4, o5, o6, o7;

    weighted_sum dut (
        .clock(clock), .start(start), .d(d), .v_valid(v_valid), .p(p),
        .v_data$0(v0), .v_data$1(v1), .v_data$2(v2), .v_data$3(v3),
        .v_data$4(v4), .v_data$5(v5), .v_data$6(v6), .v_data$7(v7),
        .f_valid(f_valid), .alpha(alpha),
        .vmean$0(m0), .vmean$1(m1), .vmean$2(m2), .vmean$3(m3),
        .vmean$4(m4), .vmean$5(m5), .vmean$6(m6), .vmean$7(m7),
        .out_valid(out_valid),
        .out_data$0(o0), .out_data$1(o1), .out_data$2(o2), .out_data$3(o3),
        .out_data$4(o4), .out_data$5(o5), .out_data$6(o6), .out_data$7(o7)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                    start, d, v_valid, p, f_valid, alpha, v0, v1, v2, v3, v4, v5, v6, v7,
                    m0, m1, m2, m3, m4, m5, m6, m7);
        while (n == 22) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid)
                $fwrite(fout, "%0d %h %h %h %h %h %h %h %h\n", t, o0, o1, o2, o3, o4, o5, o6, o7);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                        start, d, v_valid, p, f_valid, alpha, v0, v1, v2, v3, v4, v5, v6, v7,
                        m0, m1, m2, m3, m4, m5, m6, m7);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
